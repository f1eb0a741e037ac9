package mcp

import (
	"context"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// ServeStdio serves MCP as newline-delimited JSON-RPC on in and out (the
// process's stdin and stdout) until the client disconnects or ctx ends,
// acting as the agent named agent of workspace ws — or, when agent is "",
// as the MCP client's own agent (core.Service.ClientAgent), created on
// first use. The agent is looked up on every call, so revoking it takes
// effect at once.
func ServeStdio(ctx context.Context, svc *core.Service, ws, agent string, in io.Reader, out io.Writer, o Options) error {
	who := func(ctx context.Context, _ *sdk.RequestExtra) (memory.Principal, error) {
		if agent == "" {
			return svc.ClientAgent(ctx, ws, clientName(ctx))
		}
		return svc.LocalAgent(ctx, ws, agent)
	}
	srv := NewServer(svc, who, o)
	srv.AddReceivingMiddleware(withClientName)
	t := &sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{cleanWriter{out}}}
	return srv.Run(ctx, t)
}

// clientKey carries the MCP client's name (initialize's clientInfo.name)
// in a request's context.
type clientKey struct{}

func clientName(ctx context.Context) string {
	name, _ := ctx.Value(clientKey{}).(string)
	return name
}

// withClientName puts the name the client gave at initialize in each
// request's context, for the principal of a session without --agent.
func withClientName(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if ss, ok := req.GetSession().(*sdk.ServerSession); ok {
			if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil {
				ctx = context.WithValue(ctx, clientKey{}, ip.ClientInfo.Name)
			}
		}
		return next(ctx, method, req)
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// principalKey carries the authenticated principal of an HTTP request.
type principalKey struct{}

// WithPrincipal returns ctx carrying p, the principal the HTTP transport's
// caller authenticated.
func WithPrincipal(ctx context.Context, p memory.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// tokenPrincipal is the principal of a request served over HTTP: the one
// its bearer token authenticated, handed to the tool through the SDK's
// token information.
func tokenPrincipal(_ context.Context, extra *sdk.RequestExtra) (memory.Principal, error) {
	if extra != nil && extra.TokenInfo != nil {
		if p, ok := extra.TokenInfo.Extra[principalExtra].(memory.Principal); ok {
			return p, nil
		}
	}
	return memory.Principal{}, fault.New(fault.Unauthenticated, "missing, invalid or revoked token")
}

const principalExtra = "memgate.principal"

// HTTPHandler serves MCP over Streamable HTTP. The caller authenticates
// every request (the same bearer tokens as REST) and puts the principal in
// its context with WithPrincipal; a request without one is refused with
// 401. The server is stateless — no session outlives a request — so any
// replica can answer any request, and JSON responses need no long-lived
// streams.
func HTTPHandler(svc *core.Service, o Options) http.Handler {
	srv := NewServer(svc, tokenPrincipal, o)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		Logger:       o.Logger,
	})
	verify := func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		p, ok := r.Context().Value(principalKey{}).(memory.Principal)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: p.ID, Extra: map[string]any{principalExtra: p}}, nil
	}
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
}
