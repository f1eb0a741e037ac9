package core

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"time"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// errNoSession is the one answer for a console session whose principal
// is gone, revoked or no operator: it never says which.
func errNoSession() error {
	return fault.New(fault.Unauthenticated, "console session expired or signed out: sign in again")
}

// ConsoleSession is a console session as its holder sees it. ID is
// the secret the cookie carries: returned by ConsoleSignIn only, never
// stored (the database keeps its sha256).
type ConsoleSession struct {
	ID        string
	CSRF      string
	ExpiresAt time.Time
}

// DefaultConsoleTTL is how long a console session lasts from sign-in
// when the caller names no lifetime.
const DefaultConsoleTTL = 8 * time.Hour

// ConsoleSignIn exchanges a token for a console session of ttl
// (DefaultConsoleTTL when <= 0). Only operators may sign in: an agent's
// token is refused with the same message whether it is valid or not, so
// the console cannot be used to probe agent tokens. The session is
// stored in the database (by the hash of its id), so it survives a
// restart and every replica accepts it; expired sessions are deleted
// on the way. The sign-in is audited as the operator.
func (s *Service) ConsoleSignIn(ctx context.Context, token string, ttl time.Duration) (memory.Principal, ConsoleSession, error) {
	p, err := s.Authenticate(ctx, token)
	if err != nil {
		return memory.Principal{}, ConsoleSession{}, err
	}
	if p.Kind != memory.KindOperator {
		return memory.Principal{}, ConsoleSession{}, fault.New(fault.PermissionDenied, "only an operator token can sign in to the console")
	}
	if ttl <= 0 {
		ttl = DefaultConsoleTTL
	}
	now := s.clock()
	cs := ConsoleSession{ID: randomSecret(), CSRF: randomSecret(), ExpiresAt: now.Add(ttl)}
	err = s.tx(ctx, "session", func(tx store.Tx) error {
		if _, err := tx.DeleteExpiredSessions(ctx, now); err != nil {
			return err
		}
		if err := tx.InsertSession(ctx, store.Session{IDHash: memory.SHA256Hex(cs.ID), Workspace: p.Workspace, PrincipalID: p.ID,
			CSRF: cs.CSRF, CreatedAt: now, ExpiresAt: cs.ExpiresAt}); err != nil {
			return err
		}
		_, err := appendAudit(ctx, tx, p.Workspace, p, "", "console.sign_in", now, map[string]any{})
		return err
	})
	if err != nil {
		return memory.Principal{}, ConsoleSession{}, err
	}
	return p, cs, nil
}

// ConsoleSessionOf is the principal and session of a session id (a
// cookie's value). A session that is unknown, expired (by the service's
// clock), or whose operator is gone or revoked is one answer:
// Unauthenticated. The returned session has no ID.
func (s *Service) ConsoleSessionOf(ctx context.Context, id string) (memory.Principal, ConsoleSession, error) {
	if id == "" {
		return memory.Principal{}, ConsoleSession{}, errNoSession()
	}
	row, err := s.store.GetSession(ctx, memory.SHA256Hex(id))
	if errors.Is(err, store.ErrNotFound) {
		return memory.Principal{}, ConsoleSession{}, errNoSession()
	}
	if err != nil {
		return memory.Principal{}, ConsoleSession{}, storeErr(err, "session")
	}
	if !s.clock().Before(row.ExpiresAt) {
		return memory.Principal{}, ConsoleSession{}, errNoSession()
	}
	p, err := s.SessionPrincipal(ctx, row.PrincipalID)
	if err != nil {
		return memory.Principal{}, ConsoleSession{}, err
	}
	if p.Workspace != row.Workspace {
		return memory.Principal{}, ConsoleSession{}, errNoSession()
	}
	return p, ConsoleSession{CSRF: row.CSRF, ExpiresAt: row.ExpiresAt}, nil
}

// ConsoleSignOut deletes the session id and audits the end of p's
// console session.
func (s *Service) ConsoleSignOut(ctx context.Context, p memory.Principal, id string) error {
	return s.tx(ctx, "session", func(tx store.Tx) error {
		if err := tx.DeleteSession(ctx, memory.SHA256Hex(id)); err != nil {
			return err
		}
		_, err := appendAudit(ctx, tx, p.Workspace, p, "", "console.sign_out", s.clock(), map[string]any{})
		return err
	})
}

// randomSecret is 256 random bits, URL-safe.
func randomSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// SessionPrincipal is the principal a live console session acts as,
// looked up again on every request so that revoking the operator ends
// its sessions at once.
func (s *Service) SessionPrincipal(ctx context.Context, id string) (memory.Principal, error) {
	p, err := s.store.FindPrincipal(ctx, id)
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
