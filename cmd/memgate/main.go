// Command memgate is a governed, versioned memory server for AI agents.
package main

import (
	"os"

	"github.com/memgate/memgate/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
}
