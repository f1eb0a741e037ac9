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

// techList is the built-in technology list: a category, then the
// canonical name and its other spellings separated by "|". A spelling
// starting with "^" is also an ordinary English word: it counts only when
// capitalised and not the first word of a sentence.
var techList = [...]struct{ cat, spellings string }{
	// Languages.
	{"lang", "^go|golang"},
	{"lang", "python|python3"},
	{"lang", "^rust"},
	{"lang", "java"},
	{"lang", "kotlin"},
	{"lang", "scala"},
	{"lang", "javascript|js"},
	{"lang", "typescript|ts"},
	{"lang", "c++|cpp"},
	{"lang", "c#|csharp"},
	{"lang", "^ruby"},
	{"lang", "php"},
	{"lang", "^swift"},
	{"lang", "elixir"},
	{"lang", "erlang"},
	{"lang", "haskell"},
	{"lang", "clojure"},
	{"lang", "zig"},
	{"lang", "^dart"},
	{"lang", "lua"},
	{"lang", "perl"},
	{"lang", "ocaml"},
	{"lang", "^r"},
	{"lang", "^julia"},
	{"lang", "bash"},
	{"lang", "powershell"},
	{"lang", "sql"},
	// Databases.
	{"db", "postgresql|postgres|psql|pg"},
	{"db", "mysql"},
	{"db", "mariadb"},
	{"db", "sqlite|sqlite3"},
	{"db", "mongodb|mongo"},
	{"db", "cassandra"},
	{"db", "dynamodb|dynamo"},
	{"db", "sql server|mssql|ms sql"},
	{"db", "^oracle"},
	{"db", "cockroachdb|^cockroach"},
	{"db", "clickhouse"},
	{"db", "duckdb"},
	{"db", "neo4j"},
	{"db", "influxdb"},
	{"db", "timescaledb|timescale"},
	{"db", "couchdb"},
	{"db", "firestore"},
	{"db", "supabase"},
	{"db", "planetscale"},
	{"db", "^snowflake"},
	{"db", "bigquery"},
	{"db", "redshift"},
	{"db", "elasticsearch|^elastic"},
	{"db", "opensearch"},
	{"db", "pgvector"},
	{"db", "qdrant"},
	{"db", "pinecone"},
	{"db", "weaviate"},
	{"db", "milvus"},
	// Caches.
	{"cache", "redis"},
	{"cache", "memcached"},
	{"cache", "valkey"},
	// Queues and streams.
	{"queue", "kafka|apache kafka"},
	{"queue", "rabbitmq|^rabbit"},
	{"queue", "nats"},
	{"queue", "^pulsar"},
	{"queue", "kinesis"},
	{"queue", "sqs"},
	{"queue", "celery"},
	// Cloud providers and platforms.
	{"cloud", "aws|amazon web services"},
	{"cloud", "gcp|google cloud|google cloud platform"},
	{"cloud", "azure"},
	{"cloud", "digitalocean"},
	{"cloud", "hetzner"},
	{"cloud", "heroku"},
	{"cloud", "vercel"},
	{"cloud", "netlify"},
	{"cloud", "cloudflare"},
	{"cloud", "fly.io"},
	{"cloud", "firebase"},
	{"cloud", "s3"},
	{"cloud", "ec2"},
	{"cloud", "^lambda"},
	// Infrastructure.
	{"infra", "kubernetes|k8s"},
	{"infra", "docker"},
	{"infra", "podman"},
	{"infra", "terraform"},
	{"infra", "ansible"},
	{"infra", "helm"},
	{"infra", "nginx"},
	{"infra", "caddy"},
	{"infra", "traefik"},
	{"infra", "haproxy"},
	{"infra", "^envoy"},
	{"infra", "istio"},
	{"infra", "consul"},
	{"infra", "^vault"},
	{"infra", "etcd"},
	{"infra", "minio"},
	{"infra", "proxmox"},
	{"infra", "vmware"},
	// Operating systems.
	{"os", "linux"},
	{"os", "ubuntu"},
	{"os", "debian"},
	{"os", "fedora"},
	{"os", "arch linux"},
	{"os", "macos|mac os|osx"},
	{"os", "^windows"},
	{"os", "android"},
	{"os", "ios"},
	// Editors and IDEs.
	{"editor", "vim"},
	{"editor", "neovim|nvim"},
	{"editor", "emacs"},
	{"editor", "vs code|vscode|visual studio code"},
	{"editor", "intellij"},
	{"editor", "goland"},
	{"editor", "pycharm"},
	{"editor", "xcode"},
	{"editor", "^cursor"},
	{"editor", "^zed"},
	// Frontend.
	{"frontend", "^react|react.js|reactjs"},
	{"frontend", "vue|vue.js|vuejs"},
	{"frontend", "angular"},
	{"frontend", "svelte|sveltekit"},
	{"frontend", "next.js|nextjs"},
	{"frontend", "nuxt"},
	{"frontend", "tailwind|tailwindcss|tailwind css"},
	{"frontend", "htmx"},
	{"frontend", "jquery"},
	{"frontend", "webpack"},
	{"frontend", "vite"},
	// Backend frameworks and runtimes.
	{"backend", "node.js|nodejs|^node"},
	{"backend", "deno"},
	{"backend", "^bun"},
	{"backend", "django"},
	{"backend", "^flask"},
	{"backend", "fastapi"},
	{"backend", "^rails|ruby on rails"},
	{"backend", "laravel"},
	{"backend", "spring boot|^spring"},
	{"backend", ".net|dotnet"},
	{"backend", "^express|express.js|expressjs"},
	{"backend", "graphql"},
	{"backend", "grpc"},
	// Mobile.
	{"mobile", "flutter"},
	{"mobile", "react native"},
	{"mobile", "swiftui"},
	// Machine learning and AI.
	{"ml", "pytorch|^torch"},
	{"ml", "tensorflow"},
	{"ml", "scikit-learn|sklearn"},
	{"ml", "hugging face|huggingface"},
	{"ml", "langchain"},
	{"ml", "llamaindex"},
	{"ai", "openai"},
	{"ai", "chatgpt"},
	{"ai", "^claude"},
	{"ai", "^gemini"},
	{"ai", "ollama"},
	// Data tools.
	{"data", "pandas"},
	{"data", "numpy"},
	{"data", "^spark|apache spark|pyspark"},
	{"data", "airflow"},
	{"data", "dbt"},
	{"data", "jupyter"},
	{"data", "tableau"},
	{"data", "power bi"},
	{"data", "^excel"},
	{"data", "metabase"},
	// Version control and CI.
	{"vcs", "git"},
	{"vcs", "github"},
	{"vcs", "gitlab"},
	{"vcs", "bitbucket"},
	{"ci", "github actions"},
	{"ci", "jenkins"},
	{"ci", "circleci"},
	// Observability.
	{"observability", "prometheus"},
	{"observability", "grafana"},
	{"observability", "datadog"},
	{"observability", "^sentry"},
	{"observability", "opentelemetry|otel"},
	// Auth.
	{"auth", "keycloak"},
	{"auth", "auth0"},
	{"auth", "okta"},
	// Networking.
	{"network", "tailscale"},
	{"network", "wireguard"},
	{"network", "openvpn"},
	// Work tools.
	{"tool", "^slack"},
	{"tool", "jira"},
	{"tool", "^notion"},
	{"tool", "confluence"},
	{"tool", "figma"},
	{"tool", "^obsidian"},
	{"tool", "^linear"},
	{"tool", "trello"},
}

func init() {
	for _, e := range techList {
		sp := strings.Split(e.spellings, "|")
		canon := strings.TrimPrefix(sp[0], "^")
		for _, s := range sp {
			t := tech{name: canon, cat: e.cat, capOnly: strings.HasPrefix(s, "^")}
			s = strings.TrimPrefix(s, "^")
			techTable[s] = t
			if f, _, ok := strings.Cut(s, " "); ok {
				techFirst[f] = true
			}
		}
	}
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
