package mcp

import (
	"context"
	"io"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
)

// ServeStdio serves MCP as newline-delimited JSON-RPC on in and out (the
// process's stdin and stdout) until the client disconnects or ctx ends,
// acting as the agent named agent of workspace ws. The agent is looked
// up on every call, so revoking it takes effect at once.
func ServeStdio(ctx context.Context, svc *core.Service, ws, agent string, in io.Reader, out io.Writer, o Options) error {
	who := func(ctx context.Context, _ *sdk.RequestExtra) (memory.Principal, error) {
		return svc.LocalAgent(ctx, ws, agent)
	}
	t := &sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}}
	return NewServer(svc, who, o).Run(ctx, t)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
