package extract

import "strings"

// tech is one entry of the built-in technology list.
type tech struct {
	name string // canonical, lower-case entity name
	cat  string // category; two names of one category are alternatives (see ReconcileRules)
	// capOnly marks a spelling that is also an ordinary English word
	// ("go", "rust", "slack"): it counts only when written with a capital
	// letter and not as the first word of a sentence.
	capOnly bool
}

// techTable maps every spelling (one to three lower-case words) to its
// technology. Categories: lang, db, cache, queue, cloud, infra, os, editor,
// frontend, backend, mobile, ml, data, vcs, ci, observability, auth,
// network, tool, ai.
var techTable = map[string]tech{}

// techFirst holds the first word of every multi-word spelling.
var techFirst = map[string]bool{}

// techMaxWords is the longest spelling in techTable, in words.
const techMaxWords = 3

func init() {
	// A spelling starting with "^" is also an ordinary English word: it
	// counts only when capitalised and not the first word of a sentence.
	add := func(cat, name string, spellings ...string) {
		canon := strings.TrimPrefix(name, "^")
		for _, s := range append([]string{name}, spellings...) {
			t := tech{name: canon, cat: cat, capOnly: strings.HasPrefix(s, "^")}
			s = strings.TrimPrefix(s, "^")
			techTable[s] = t
			if f, _, ok := strings.Cut(s, " "); ok {
				techFirst[f] = true
			}
		}
	}
	// Languages.
	add("lang", "^go", "golang")
	add("lang", "python", "python3")
	add("lang", "^rust")
	add("lang", "java")
	add("lang", "kotlin")
	add("lang", "scala")
	add("lang", "javascript", "js")
	add("lang", "typescript", "ts")
	add("lang", "c++", "cpp")
	add("lang", "c#", "csharp")
	add("lang", "^ruby")
	add("lang", "php")
	add("lang", "^swift")
	add("lang", "elixir")
	add("lang", "erlang")
	add("lang", "haskell")
	add("lang", "clojure")
	add("lang", "zig")
	add("lang", "^dart")
	add("lang", "lua")
	add("lang", "perl")
	add("lang", "ocaml")
	add("lang", "^r")
	add("lang", "^julia")
	add("lang", "bash")
	add("lang", "powershell")
	add("lang", "sql")
	// Databases.
	add("db", "postgresql", "postgres", "psql", "pg")
	add("db", "mysql")
	add("db", "mariadb")
	add("db", "sqlite", "sqlite3")
	add("db", "mongodb", "mongo")
	add("db", "cassandra")
	add("db", "dynamodb", "dynamo")
	add("db", "sql server", "mssql", "ms sql")
	add("db", "^oracle")
	add("db", "cockroachdb", "^cockroach")
	add("db", "clickhouse")
	add("db", "duckdb")
	add("db", "neo4j")
	add("db", "influxdb")
	add("db", "timescaledb", "timescale")
	add("db", "couchdb")
	add("db", "firestore")
	add("db", "supabase")
	add("db", "planetscale")
	add("db", "^snowflake")
	add("db", "bigquery")
	add("db", "redshift")
	add("db", "elasticsearch", "^elastic")
	add("db", "opensearch")
	add("db", "pgvector")
	add("db", "qdrant")
	add("db", "pinecone")
	add("db", "weaviate")
	add("db", "milvus")
	// Caches.
	add("cache", "redis")
	add("cache", "memcached")
	add("cache", "valkey")
	// Queues and streams.
	add("queue", "kafka", "apache kafka")
	add("queue", "rabbitmq", "^rabbit")
	add("queue", "nats")
	add("queue", "^pulsar")
	add("queue", "kinesis")
	add("queue", "sqs")
	add("queue", "celery")
	// Cloud providers and platforms.
	add("cloud", "aws", "amazon web services")
	add("cloud", "gcp", "google cloud", "google cloud platform")
	add("cloud", "azure")
	add("cloud", "digitalocean")
	add("cloud", "hetzner")
	add("cloud", "heroku")
	add("cloud", "vercel")
	add("cloud", "netlify")
	add("cloud", "cloudflare")
	add("cloud", "fly.io")
	add("cloud", "firebase")
	add("cloud", "s3")
	add("cloud", "ec2")
	add("cloud", "^lambda")
	// Infrastructure.
	add("infra", "kubernetes", "k8s")
	add("infra", "docker")
	add("infra", "podman")
	add("infra", "terraform")
	add("infra", "ansible")
	add("infra", "helm")
	add("infra", "nginx")
	add("infra", "caddy")
	add("infra", "traefik")
	add("infra", "haproxy")
	add("infra", "^envoy")
	add("infra", "istio")
	add("infra", "consul")
	add("infra", "^vault")
	add("infra", "etcd")
	add("infra", "minio")
	add("infra", "proxmox")
	add("infra", "vmware")
	// Operating systems.
	add("os", "linux")
	add("os", "ubuntu")
	add("os", "debian")
	add("os", "fedora")
	add("os", "arch linux")
	add("os", "macos", "mac os", "osx")
	add("os", "^windows")
	add("os", "android")
	add("os", "ios")
	// Editors and IDEs.
	add("editor", "vim")
	add("editor", "neovim", "nvim")
	add("editor", "emacs")
	add("editor", "vs code", "vscode", "visual studio code")
	add("editor", "intellij")
	add("editor", "goland")
	add("editor", "pycharm")
	add("editor", "xcode")
	add("editor", "^cursor")
	add("editor", "^zed")
	// Frontend.
	add("frontend", "^react", "react.js", "reactjs")
	add("frontend", "vue", "vue.js", "vuejs")
	add("frontend", "angular")
	add("frontend", "svelte", "sveltekit")
	add("frontend", "next.js", "nextjs")
	add("frontend", "nuxt")
	add("frontend", "tailwind", "tailwindcss", "tailwind css")
	add("frontend", "htmx")
	add("frontend", "jquery")
	add("frontend", "webpack")
	add("frontend", "vite")
	// Backend frameworks and runtimes.
	add("backend", "node.js", "nodejs", "^node")
	add("backend", "deno")
	add("backend", "^bun")
	add("backend", "django")
	add("backend", "^flask")
	add("backend", "fastapi")
	add("backend", "^rails", "ruby on rails")
	add("backend", "laravel")
	add("backend", "spring boot", "^spring")
	add("backend", ".net", "dotnet")
	add("backend", "^express", "express.js", "expressjs")
	add("backend", "graphql")
	add("backend", "grpc")
	// Mobile.
	add("mobile", "flutter")
	add("mobile", "react native")
	add("mobile", "swiftui")
	// Machine learning and AI.
	add("ml", "pytorch", "^torch")
	add("ml", "tensorflow")
	add("ml", "scikit-learn", "sklearn")
	add("ml", "hugging face", "huggingface")
	add("ml", "langchain")
	add("ml", "llamaindex")
	add("ai", "openai")
	add("ai", "chatgpt")
	add("ai", "^claude")
	add("ai", "^gemini")
	add("ai", "ollama")
	// Data tools.
	add("data", "pandas")
	add("data", "numpy")
	add("data", "^spark", "apache spark", "pyspark")
	add("data", "airflow")
	add("data", "dbt")
	add("data", "jupyter")
	add("data", "tableau")
	add("data", "power bi")
	add("data", "^excel")
	add("data", "metabase")
	// Version control and CI.
	add("vcs", "git")
	add("vcs", "github")
	add("vcs", "gitlab")
	add("vcs", "bitbucket")
	add("ci", "github actions")
	add("ci", "jenkins")
	add("ci", "circleci")
	// Observability.
	add("observability", "prometheus")
	add("observability", "grafana")
	add("observability", "datadog")
	add("observability", "^sentry")
	add("observability", "opentelemetry", "otel")
	// Auth.
	add("auth", "keycloak")
	add("auth", "auth0")
	add("auth", "okta")
	// Networking.
	add("network", "tailscale")
	add("network", "wireguard")
	add("network", "openvpn")
	// Work tools.
	add("tool", "^slack")
	add("tool", "jira")
	add("tool", "^notion")
	add("tool", "confluence")
	add("tool", "figma")
	add("tool", "^obsidian")
	add("tool", "^linear")
	add("tool", "trello")
}

// techAt reports the technology spelled by the words starting at
// toks[i], and how many words it spans.
func techAt(toks []token, i int) (tech, int, bool) {
	if techFirst[toks[i].w] {
		var buf [64]byte
		for n := min(techMaxWords, len(toks)-i); n >= 2; n-- {
			key := buf[:0]
			for k := range n {
				if k > 0 {
					key = append(key, ' ')
				}
				key = append(key, toks[i+k].w...)
			}
			if t, ok := techTable[string(key)]; ok {
				return t, n, true
			}
		}
	}
	t, ok := techTable[toks[i].w]
	if !ok || t.capOnly && (!toks[i].cap || toks[i].first) {
		return tech{}, 0, false
	}
	return t, 1, true
}
