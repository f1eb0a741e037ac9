package core

import (
	"context"
	"errors"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// errNoSession is the one answer for a console session whose principal
// is gone, revoked or no operator: it never says which.
func errNoSession() error {
	return fault.New(fault.Unauthenticated, "console session expired or signed out: sign in again")
}

// ConsoleSignIn exchanges a token for the principal a console session
// acts as. Only operators may sign in: an agent's token is refused with
// the same message whether it is valid or not, so the console cannot be
// used to probe agent tokens. The sign-in is audited as the operator.
func (s *Service) ConsoleSignIn(ctx context.Context, token string) (memory.Principal, error) {
	p, err := s.Authenticate(ctx, token)
	if err != nil {
		return memory.Principal{}, err
	}
	if p.Kind != memory.KindOperator {
		return memory.Principal{}, fault.New(fault.PermissionDenied, "only an operator token can sign in to the console")
	}
	return p, s.auditConsole(ctx, p, "console.sign_in")
}

// ConsoleSignOut audits the end of an operator's console session.
func (s *Service) ConsoleSignOut(ctx context.Context, p memory.Principal) error {
	return s.auditConsole(ctx, p, "console.sign_out")
}

func (s *Service) auditConsole(ctx context.Context, p memory.Principal, event string) error {
	return s.tx(ctx, "audit", func(tx store.Tx) error {
		_, err := appendAudit(ctx, tx, p.Workspace, p, "", event, s.clock(), map[string]any{})
		return err
	})
}

// SessionPrincipal is the principal a live console session acts as,
// looked up again on every request so that revoking the operator ends
// its sessions at once.
func (s *Service) SessionPrincipal(ctx context.Context, id string) (memory.Principal, error) {
	p, err := s.store.GetPrincipal(ctx, store.PrincipalFind{ID: id})
	if errors.Is(err, store.ErrNotFound) {
		return memory.Principal{}, errNoSession()
	}
	if err != nil {
		return memory.Principal{}, storeErr(err, "principal")
	}
	if p.Kind != memory.KindOperator || p.Revoked() {
		return memory.Principal{}, errNoSession()
	}
	p.TokenHash = nil
	return p, nil
}
