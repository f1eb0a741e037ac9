// Package config holds memgate's configuration: one struct filled once from
// flags, then MEMGATE_* environment variables, then defaults, validated and
// passed explicitly.
package config

import (
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/dburl"
)

// Config is the whole configuration of a memgate process.
type Config struct {
	// Addr is the HTTP listen address (MEMGATE_ADDR).
	Addr string `json:"addr"`
	// DataDir holds the embedded database (MEMGATE_DATA_DIR) and, with
	// PostgreSQL, only this process's search index snapshot.
	DataDir string `json:"data_dir"`
	// DatabaseURL selects PostgreSQL instead of the embedded SQLite
	// database: a postgres:// or postgresql:// URL (MEMGATE_DATABASE_URL,
	// or the file named by MEMGATE_DATABASE_URL_FILE). It may hold a
	// password: Dump redacts it, and nothing logs it.
	DatabaseURL string `json:"database_url,omitempty"`
	// PolicyFile is the gate policy, YAML or JSON (MEMGATE_POLICY); empty
	// means the built-in defaults.
	PolicyFile string `json:"policy_file"`
	// LogLevel is debug, info, warn or error (MEMGATE_LOG_LEVEL).
	LogLevel string `json:"log_level"`
	// SQLiteSync is normal or full (MEMGATE_SQLITE_SYNC): full fsyncs every
	// commit, surviving power loss; normal survives process crashes.
	SQLiteSync string `json:"sqlite_sync"`
	// Workspace is the workspace CLI commands act on (MEMGATE_WORKSPACE).
	Workspace string `json:"workspace"`
	// ShutdownTimeout bounds graceful shutdown (MEMGATE_SHUTDOWN_TIMEOUT).
	ShutdownTimeout time.Duration `json:"shutdown_timeout"`
	// AuditCheckInterval is how often the server re-verifies every audit
	// chain for /readyz (MEMGATE_AUDIT_CHECK_INTERVAL).
	AuditCheckInterval time.Duration `json:"audit_check_interval"`
	// ExpiryInterval is how often the approval TTL job runs
	// (MEMGATE_EXPIRY_INTERVAL).
	ExpiryInterval time.Duration `json:"expiry_interval"`
	// MaintenanceInterval is how often serve runs the maintenance sweep
	// (decay, archive; MEMGATE_MAINTENANCE_INTERVAL); 0 disables it.
	MaintenanceInterval time.Duration `json:"maintenance_interval"`
	// Console serves the operator console at /console/ (MEMGATE_CONSOLE;
	// docs/console.md).
	Console bool `json:"console"`

	// Embedder is none, local (word vectors), use (the USE-Lite sentence
	// encoder) or openai (MEMGATE_EMBEDDER). Empty means not given: the
	// embedder the data directory was created with, else the built-in
	// USE-Lite (see docs/embeddings.md).
	Embedder string `json:"embedder"`
	// EmbedderPath is the word-vector file of the local embedder, or the
	// TensorFlow.js model directory of use (MEMGATE_EMBEDDER_PATH); use
	// without a path is the model built into the binary.
	EmbedderPath string `json:"embedder_path,omitempty"`
	// EmbedderDim is the dimension of the openai embedder's vectors
	// (MEMGATE_EMBEDDER_DIM); 0 asks the endpoint at start.
	EmbedderDim int `json:"embedder_dim,omitempty"`
	// EmbedderURL is the base URL of an OpenAI-compatible API, e.g.
	// http://localhost:11434/v1 (MEMGATE_EMBEDDER_URL).
	EmbedderURL string `json:"embedder_url,omitempty"`
	// EmbedderModel is the remote model name (MEMGATE_EMBEDDER_MODEL).
	EmbedderModel string `json:"embedder_model,omitempty"`
	// The API key is read from MEMGATE_EMBEDDER_API_KEY or the file named
	// by MEMGATE_EMBEDDER_API_KEY_FILE; it never appears in Config.
	// VectorIndex is auto, exact or hnsw (MEMGATE_VECTOR_INDEX).
	VectorIndex string `json:"vector_index"`

	// JobWorkers is the size of the durable job worker pool
	// (MEMGATE_JOB_WORKERS); JobLease how long an attempt may run before
	// another worker may take its job over (MEMGATE_JOB_LEASE).
	JobWorkers int           `json:"job_workers"`
	JobLease   time.Duration `json:"job_lease"`
	// WebhookTimeout bounds one webhook delivery (MEMGATE_WEBHOOK_TIMEOUT);
	// an endpoint whose deliverer died is taken over after 3× it.
	WebhookTimeout time.Duration `json:"webhook_timeout"`
	// OTelEndpoint is the OTLP/HTTP collector traces go to
	// (MEMGATE_OTEL_ENDPOINT); "" leaves tracing off unless the standard
	// OTEL_EXPORTER_OTLP_ENDPOINT is set. OTelSampleRatio is the share of
	// traces kept (MEMGATE_OTEL_SAMPLE_RATIO, default 1).
	OTelEndpoint    string  `json:"otel_endpoint"`
	OTelSampleRatio float64 `json:"otel_sample_ratio"`
	// LLMURL and LLMModel configure the optional LLM extractor: an
	// OpenAI-compatible chat-completions API (MEMGATE_LLM_URL,
	// MEMGATE_LLM_MODEL). Its key is read from MEMGATE_LLM_API_KEY or
	// the file named by MEMGATE_LLM_API_KEY_FILE; it never appears here.
	LLMURL   string `json:"llm_url,omitempty"`
	LLMModel string `json:"llm_model,omitempty"`
	// Rerank* configure the optional rerank stage of knowledge search
	// (docs/knowledge.md): off unless RerankURL is set (MEMGATE_RERANK_URL,
	// _SHAPE tei or cohere, _MODEL, _TIMEOUT, _TOP_N; 0 means the
	// defaults, 2s and 20). Its key is read from MEMGATE_RERANK_API_KEY or
	// the file named by MEMGATE_RERANK_API_KEY_FILE; it never appears here.
	RerankURL     string        `json:"rerank_url,omitempty"`
	RerankShape   string        `json:"rerank_shape,omitempty"`
	RerankModel   string        `json:"rerank_model,omitempty"`
	RerankTimeout time.Duration `json:"rerank_timeout,omitempty"`
	RerankTopN    int           `json:"rerank_top_n,omitempty"`
}

// Defaults.
const (
	DefaultAddr = "127.0.0.1:8420"
)

// Default returns the defaults.
func Default() Config {
	return Config{
		Addr:                DefaultAddr,
		LogLevel:            "info",
		SQLiteSync:          "normal",
		Workspace:           "default",
		ShutdownTimeout:     15 * time.Second,
		AuditCheckInterval:  5 * time.Minute,
		ExpiryInterval:      time.Minute,
		MaintenanceInterval: time.Hour,
		Console:             true,
		VectorIndex:         "auto",
		JobWorkers:          2,
		JobLease:            2 * time.Minute,
		WebhookTimeout:      10 * time.Second,
		OTelSampleRatio:     1,
	}
}

// envNames maps each flag to its environment variable.
var envNames = map[string]string{
	"addr":                 "MEMGATE_ADDR",
	"data-dir":             "MEMGATE_DATA_DIR",
	"database-url":         "MEMGATE_DATABASE_URL",
	"policy":               "MEMGATE_POLICY",
	"log-level":            "MEMGATE_LOG_LEVEL",
	"sqlite-sync":          "MEMGATE_SQLITE_SYNC",
	"workspace":            "MEMGATE_WORKSPACE",
	"shutdown-timeout":     "MEMGATE_SHUTDOWN_TIMEOUT",
	"audit-check-interval": "MEMGATE_AUDIT_CHECK_INTERVAL",
	"expiry-interval":      "MEMGATE_EXPIRY_INTERVAL",
	"maintenance-interval": "MEMGATE_MAINTENANCE_INTERVAL",
	"console":              "MEMGATE_CONSOLE",
	"embedder":             "MEMGATE_EMBEDDER",
	"embedder-path":        "MEMGATE_EMBEDDER_PATH",
	"embedder-url":         "MEMGATE_EMBEDDER_URL",
	"embedder-model":       "MEMGATE_EMBEDDER_MODEL",
	"embedder-dim":         "MEMGATE_EMBEDDER_DIM",
	"vector-index":         "MEMGATE_VECTOR_INDEX",
	"job-workers":          "MEMGATE_JOB_WORKERS",
	"job-lease":            "MEMGATE_JOB_LEASE",
	"webhook-timeout":      "MEMGATE_WEBHOOK_TIMEOUT",
	"otel-endpoint":        "MEMGATE_OTEL_ENDPOINT",
	"otel-sample-ratio":    "MEMGATE_OTEL_SAMPLE_RATIO",
	"llm-url":              "MEMGATE_LLM_URL",
	"llm-model":            "MEMGATE_LLM_MODEL",
	"rerank-url":           "MEMGATE_RERANK_URL",
	"rerank-shape":         "MEMGATE_RERANK_SHAPE",
	"rerank-model":         "MEMGATE_RERANK_MODEL",
	"rerank-timeout":       "MEMGATE_RERANK_TIMEOUT",
	"rerank-top-n":         "MEMGATE_RERANK_TOP_N",
	"agent":                "MEMGATE_MCP_AGENT", // memgate mcp only
}

// Bind registers the flags that configure c on fs. serverFlags adds the
// flags only `serve` needs.
func (c *Config) Bind(fs *flag.FlagSet, serverFlags bool) {
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "data directory of the embedded database (env MEMGATE_DATA_DIR)")
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "postgres:// URL: use PostgreSQL instead of the embedded database (env MEMGATE_DATABASE_URL or MEMGATE_DATABASE_URL_FILE; prefer those, a flag shows in ps)")
	fs.StringVar(&c.PolicyFile, "policy", c.PolicyFile, "gate policy file, YAML or JSON (env MEMGATE_POLICY)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error (env MEMGATE_LOG_LEVEL)")
	fs.StringVar(&c.SQLiteSync, "sqlite-sync", c.SQLiteSync, "normal or full (env MEMGATE_SQLITE_SYNC)")
	fs.StringVar(&c.Workspace, "workspace", c.Workspace, "workspace to act on (env MEMGATE_WORKSPACE)")
	fs.StringVar(&c.Embedder, "embedder", c.Embedder, "none, local, use or openai; default: the data directory's, else use (built in) (env MEMGATE_EMBEDDER)")
	fs.StringVar(&c.EmbedderPath, "embedder-path", c.EmbedderPath, "word-vector file (local) or model directory (use; none means the built-in model) (env MEMGATE_EMBEDDER_PATH)")
	fs.IntVar(&c.EmbedderDim, "embedder-dim", c.EmbedderDim, "dimension of the openai embedder's vectors; 0 asks the endpoint (env MEMGATE_EMBEDDER_DIM)")
	fs.StringVar(&c.EmbedderURL, "embedder-url", c.EmbedderURL, "OpenAI-compatible base URL, e.g. http://localhost:11434/v1 (env MEMGATE_EMBEDDER_URL)")
	fs.StringVar(&c.EmbedderModel, "embedder-model", c.EmbedderModel, "remote embedding model (env MEMGATE_EMBEDDER_MODEL)")
	fs.StringVar(&c.VectorIndex, "vector-index", c.VectorIndex, "auto, exact or hnsw (env MEMGATE_VECTOR_INDEX)")
	if serverFlags {
		fs.StringVar(&c.Addr, "addr", c.Addr, "HTTP listen address (env MEMGATE_ADDR)")
		fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "graceful shutdown limit (env MEMGATE_SHUTDOWN_TIMEOUT)")
		fs.DurationVar(&c.AuditCheckInterval, "audit-check-interval", c.AuditCheckInterval, "audit chain re-verification interval (env MEMGATE_AUDIT_CHECK_INTERVAL)")
		fs.DurationVar(&c.ExpiryInterval, "expiry-interval", c.ExpiryInterval, "approval TTL job interval (env MEMGATE_EXPIRY_INTERVAL)")
		fs.DurationVar(&c.MaintenanceInterval, "maintenance-interval", c.MaintenanceInterval, "maintenance sweep interval, 0 disables (env MEMGATE_MAINTENANCE_INTERVAL)")
		fs.BoolVar(&c.Console, "console", c.Console, "serve the operator console at /console/; -console=false turns it off (env MEMGATE_CONSOLE)")
		fs.IntVar(&c.JobWorkers, "job-workers", c.JobWorkers, "durable job workers, e.g. conversation extraction (env MEMGATE_JOB_WORKERS)")
		fs.DurationVar(&c.JobLease, "job-lease", c.JobLease, "how long a job attempt may run before another worker takes the job over (env MEMGATE_JOB_LEASE)")
		fs.DurationVar(&c.WebhookTimeout, "webhook-timeout", c.WebhookTimeout, "how long one webhook delivery may take (env MEMGATE_WEBHOOK_TIMEOUT)")
		fs.StringVar(&c.OTelEndpoint, "otel-endpoint", c.OTelEndpoint, "OTLP/HTTP collector URL for traces, e.g. http://localhost:4318; off when empty (env MEMGATE_OTEL_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT)")
		fs.Float64Var(&c.OTelSampleRatio, "otel-sample-ratio", c.OTelSampleRatio, "share of traces kept, 0-1 (env MEMGATE_OTEL_SAMPLE_RATIO)")
		fs.StringVar(&c.LLMURL, "llm-url", c.LLMURL, "OpenAI-compatible base URL of the optional LLM extractor (env MEMGATE_LLM_URL; key in MEMGATE_LLM_API_KEY)")
		fs.StringVar(&c.LLMModel, "llm-model", c.LLMModel, "chat model of the LLM extractor (env MEMGATE_LLM_MODEL)")
		fs.StringVar(&c.RerankURL, "rerank-url", c.RerankURL, "rerank endpoint of knowledge search, e.g. http://tei:8080/rerank; off when empty (env MEMGATE_RERANK_URL; key in MEMGATE_RERANK_API_KEY)")
		fs.StringVar(&c.RerankShape, "rerank-shape", c.RerankShape, "tei (POST /rerank) or cohere (POST /v1/rerank); default by the URL (env MEMGATE_RERANK_SHAPE)")
		fs.StringVar(&c.RerankModel, "rerank-model", c.RerankModel, "model name sent in the cohere shape (env MEMGATE_RERANK_MODEL)")
		fs.DurationVar(&c.RerankTimeout, "rerank-timeout", c.RerankTimeout, "how long one rerank call may take before search keeps the fused order; 0 means 2s (env MEMGATE_RERANK_TIMEOUT)")
		fs.IntVar(&c.RerankTopN, "rerank-top-n", c.RerankTopN, "how many fused hits are reranked; 0 means 20 (env MEMGATE_RERANK_TOP_N)")
	}
}

// secretFlags may also be read from the file named by their variable
// plus _FILE (e.g. a mounted secret), when the variable itself is unset.
var secretFlags = map[string]bool{"database-url": true}

// ApplyEnv fills every flag of fs that was not set on the command line
// from its environment variable (for secrets, or the file its _FILE
// variable names). Flags win over the environment.
func ApplyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		env, ok := envNames[f.Name]
		if !ok || set[f.Name] || err != nil {
			return
		}
		v := getenv(env)
		if file := getenv(env + "_FILE"); v == "" && file != "" && secretFlags[f.Name] {
			b, e := os.ReadFile(file)
			if e != nil {
				err = fmt.Errorf("%s_FILE: cannot read %s: %v", env, file, e)
				return
			}
			v = strings.TrimSpace(string(b))
		}
		if v != "" {
			if e := f.Value.Set(v); e != nil {
				err = fmt.Errorf("%s: %v", env, e)
			}
		}
	})
	return err
}

// Validate checks c and normalises paths.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return fmt.Errorf("data-dir: no data directory (the default, $XDG_DATA_HOME/memgate or ~/.local/share/memgate, needs HOME): pass --data-dir or set MEMGATE_DATA_DIR")
	}
	if c.DatabaseURL != "" && !IsPostgresURL(c.DatabaseURL) {
		// The value is not echoed: it may hold a password.
		return fmt.Errorf("database-url: must be a postgres:// or postgresql:// URL (the embedded database is chosen with --data-dir)")
	}
	if c.Addr != "" {
		if _, _, err := net.SplitHostPort(c.Addr); err != nil {
			return fmt.Errorf("addr: must be host:port")
		}
	}
	switch c.SQLiteSync {
	case "normal", "full":
	default:
		return fmt.Errorf("sqlite-sync: must be normal or full")
	}
	if _, err := ParseLevel(c.LogLevel); err != nil {
		return err
	}
	if c.Workspace == "" {
		return fmt.Errorf("workspace: must not be empty")
	}
	switch c.Embedder {
	case "", "none", "use":
	case "local":
		if c.EmbedderPath == "" {
			return fmt.Errorf("embedder-path: required by the local embedder")
		}
	case "openai":
		if c.EmbedderURL == "" || c.EmbedderModel == "" {
			return fmt.Errorf("embedder-url and embedder-model: required by the openai embedder")
		}
	default:
		return fmt.Errorf("embedder: must be none, local, use or openai")
	}
	if c.EmbedderDim < 0 || c.EmbedderDim > 65536 {
		return fmt.Errorf("embedder-dim: must be between 0 and 65536")
	}
	switch c.VectorIndex {
	case "auto", "exact", "hnsw":
	default:
		return fmt.Errorf("vector-index: must be auto, exact or hnsw")
	}
	if (c.LLMURL == "") != (c.LLMModel == "") {
		return fmt.Errorf("llm-url and llm-model: set both to enable the LLM extractor, or neither")
	}
	if c.RerankURL != "" {
		// The value is not echoed: a URL may carry credentials.
		if u, err := url.Parse(c.RerankURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("rerank-url: must be an http:// or https:// URL")
		}
	}
	switch c.RerankShape {
	case "", "tei", "cohere":
	default:
		return fmt.Errorf("rerank-shape: must be tei or cohere")
	}
	if c.RerankURL == "" && (c.RerankShape != "" || c.RerankModel != "" || c.RerankTimeout != 0 || c.RerankTopN != 0) {
		return fmt.Errorf("rerank-url: required by the other rerank settings")
	}
	if c.RerankTimeout < 0 {
		return fmt.Errorf("rerank-timeout: must be >= 0 (0 means 2s)")
	}
	if c.RerankTopN < 0 || c.RerankTopN > 100 {
		return fmt.Errorf("rerank-top-n: must be between 0 and 100 (0 means 20)")
	}
	if c.JobWorkers < 1 || c.JobWorkers > 64 {
		return fmt.Errorf("job-workers: must be between 1 and 64")
	}
	if c.OTelSampleRatio < 0 || c.OTelSampleRatio > 1 {
		return fmt.Errorf("otel-sample-ratio: must be between 0 and 1")
	}
	if c.MaintenanceInterval < 0 {
		return fmt.Errorf("maintenance-interval: must be >= 0 (0 disables the sweep)")
	}
	if c.ShutdownTimeout <= 0 || c.AuditCheckInterval <= 0 || c.ExpiryInterval <= 0 || c.JobLease <= 0 || c.WebhookTimeout <= 0 {
		return fmt.Errorf("intervals and timeouts must be positive")
	}
	return nil
}

// DBPath is the SQLite file inside the data directory.
func (c Config) DBPath() string { return filepath.Join(c.DataDir, "memgate.db") }

// IsPostgresURL reports whether s is a postgres:// or postgresql:// URL.
func IsPostgresURL(s string) bool { return dburl.IsURL(s) }

// RedactURL returns a database URL with its password replaced by
// "xxxxx" (dburl.Redact, the one redaction of database URLs).
func RedactURL(raw string) string { return dburl.Redact(raw) }

// ParseLevel parses a log level name.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(s))); err != nil {
		return 0, fmt.Errorf("log-level: must be debug, info, warn or error")
	}
	return l, nil
}

// Dump renders c as indented JSON, the database URL's password redacted.
func (c Config) Dump() string {
	if c.DatabaseURL != "" {
		c.DatabaseURL = RedactURL(c.DatabaseURL)
	}
	if u, err := url.Parse(c.RerankURL); err == nil && u.User != nil {
		u.User = url.User("xxxxx")
		c.RerankURL = u.String()
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	return string(b)
}

// EnsureDataDir creates the data directory, private to the user.
func (c Config) EnsureDataDir() error {
	return os.MkdirAll(c.DataDir, 0o700)
}
