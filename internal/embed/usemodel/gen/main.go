// Command gen converts the TensorFlow.js USE Lite model into the compact
// form the binary embeds (package usemodel): use-lite.bin and its
// checksum use-lite.bin.sha256. Run it with `go generate
// ./internal/embed/usemodel`.
package main

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/memgate/memgate/internal/embed"
)

func main() {
	src := flag.String("src", "", "USE Lite model directory (model.json, shards, vocab.json, or a dist/ holding them)")
	out := flag.String("out", ".", "directory to write use-lite.bin and use-lite.bin.sha256 to")
	flag.Parse()
	if err := run(*src, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(src, out string) error {
	if src == "" {
		return fmt.Errorf("-src is required")
	}
	var b bytes.Buffer
	if err := embed.WriteUSELiteCompact(src, &b); err != nil {
		return err
	}
	// Check the result loads before replacing the committed file.
	if _, err := embed.LoadUSELiteCompact(b.Bytes()); err != nil {
		return err
	}
	sum := sha256.Sum256(b.Bytes())
	if err := os.WriteFile(filepath.Join(out, "use-lite.bin"), b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "use-lite.bin.sha256"), fmt.Appendf(nil, "%x  use-lite.bin\n", sum), 0o644)
}
