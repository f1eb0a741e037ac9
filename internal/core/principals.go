package core

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"slices"
	"strings"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// Tokens look like "mg_<principal id without dashes>_<43 chars of secret>".
// The id part lets us find the principal without a secret-dependent
// lookup; the secret is compared as a sha256 in constant time.
const tokenPrefix = "mg_"

func newToken(principalID string) (token string, hash []byte) {
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	sec := base64.RawURLEncoding.EncodeToString(secret[:])
	sum := sha256.Sum256([]byte(sec))
	return tokenPrefix + strings.ReplaceAll(principalID, "-", "") + "_" + sec, sum[:]
}

func parseToken(tok string) (id, secret string, ok bool) {
	rest, found := strings.CutPrefix(tok, tokenPrefix)
	if !found || len(rest) != 32+1+43 || rest[32] != '_' {
		return "", "", false
	}
	h := rest[:32]
	id = h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
	if !memory.ValidID(id) {
		return "", "", false
	}
	return id, rest[33:], true
}

// errBadToken is the single answer for every authentication failure, so a
// caller learns nothing about which part was wrong.
var errBadToken = fault.New(fault.Unauthenticated, "missing, invalid or revoked token")

// Authenticate resolves a bearer token to its principal.
func (s *Service) Authenticate(ctx context.Context, token string) (memory.Principal, error) {
	id, secret, ok := parseToken(token)
	if !ok {
		return memory.Principal{}, errBadToken
	}
	p, err := s.store.GetPrincipal(ctx, store.PrincipalFind{ID: id})
	if errors.Is(err, store.ErrNotFound) || err == nil && p.Kind == memory.KindUser {
		// Gateway users authenticate with their user key, never a token.
		return memory.Principal{}, errBadToken
	}
	if err != nil {
		return memory.Principal{}, storeErr(err, "principal")
	}
	sum := sha256.Sum256([]byte(secret))
	if subtle.ConstantTimeCompare(sum[:], p.TokenHash) != 1 || p.Revoked() {
		return memory.Principal{}, errBadToken
	}
	p.TokenHash = nil
	return p, nil
}

// Bootstrap creates the default workspace and its first operator on an
// empty database. It returns the operator's token, shown once, and
// created=false (and no token) when the workspace already exists.
func (s *Service) Bootstrap(ctx context.Context) (token string, created bool, err error) {
	_, err = s.store.GetWorkspace(ctx, memory.DefaultWorkspace)
	if err == nil {
		return "", false, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return "", false, storeErr(err, "workspace")
	}
	now := s.clock()
	op := memory.Principal{ID: memory.NewID(), Workspace: memory.DefaultWorkspace, Kind: memory.KindOperator, Name: "operator", CreatedAt: now}
	token, op.TokenHash = newToken(op.ID)
	err = s.tx(ctx, "workspace", func(tx store.Tx) error {
		if err := tx.CreateWorkspace(ctx, memory.Workspace{ID: memory.DefaultWorkspace, Settings: []byte(`{}`), CreatedAt: now}); err != nil {
			return err
		}
		if err := tx.InsertPrincipal(ctx, op); err != nil {
			return err
		}
		_, err := appendAudit(ctx, tx, memory.DefaultWorkspace, systemPrincipal(memory.DefaultWorkspace), "", "workspace.create", now,
			map[string]any{"workspace": memory.DefaultWorkspace, "operator_id": op.ID})
		return err
	})
	if fault.Is(err, fault.Conflict) { // another process bootstrapped first
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return token, true, nil
}

// CreatedPrincipal is a new principal with its token, which is shown once.
type CreatedPrincipal struct {
	memory.Principal
	Token string `json:"token"`
}

// CreateAgent registers an agent in the operator's workspace.
func (s *Service) CreateAgent(ctx context.Context, by memory.Principal, name string, trust memory.Trust) (CreatedPrincipal, error) {
	return s.createPrincipal(ctx, by, memory.KindAgent, name, trust)
}

// CreateOperator registers another operator (a new operator token).
func (s *Service) CreateOperator(ctx context.Context, by memory.Principal, name string) (CreatedPrincipal, error) {
	return s.createPrincipal(ctx, by, memory.KindOperator, name, "")
}

func (s *Service) createPrincipal(ctx context.Context, by memory.Principal, kind memory.PrincipalKind, name string, trust memory.Trust) (CreatedPrincipal, error) {
	if err := requireOperator(by); err != nil {
		return CreatedPrincipal{}, err
	}
	if !validName(name) {
		return CreatedPrincipal{}, fault.Field("name", "must be 1-64 characters of letters, digits, '_', '-' or '.'")
	}
	if reservedName(name) {
		return CreatedPrincipal{}, fault.Field("name", "is reserved for memgate's own principals; choose another name")
	}
	// Names are shown and audited everywhere; one shaped like a credential
	// is almost certainly a pasted secret.
	if len(gate.Screen(name, []string{gate.PIISecret})) > 0 {
		return CreatedPrincipal{}, fault.Field("name", "looks like a secret or API key; choose a plain name")
	}
	if kind == memory.KindAgent {
		if trust == "" {
			trust = memory.DefaultTrust
		}
		if !slices.Contains(memory.TrustLevels, trust) {
			return CreatedPrincipal{}, fault.Field("trust", "must be one of trusted, standard, restricted, read_only")
		}
	}
	now := s.clock()
	p := memory.Principal{ID: memory.NewID(), Workspace: by.Workspace, Kind: kind, Name: name, Trust: trust, CreatedAt: now}
	var token string
	token, p.TokenHash = newToken(p.ID)
	err := s.tx(ctx, string(kind)+" "+name, func(tx store.Tx) error {
		if err := tx.InsertPrincipal(ctx, p); err != nil {
			return err
		}
		_, err := appendAudit(ctx, tx, by.Workspace, by, "", string(kind)+".create", now,
			map[string]any{"principal_id": p.ID, "name": p.Name, "kind": string(kind), "trust": string(trust)})
		return err
	})
	if err != nil {
		return CreatedPrincipal{}, err
	}
	p.TokenHash = nil
	return CreatedPrincipal{Principal: p, Token: token}, nil
}

// ListAgents lists the agents of the operator's workspace.
func (s *Service) ListAgents(ctx context.Context, by memory.Principal) ([]memory.Principal, error) {
	if err := requireOperator(by); err != nil {
		return nil, err
	}
	ps, err := s.store.ListPrincipals(ctx, by.Workspace, memory.KindAgent)
	if err != nil {
		return nil, storeErr(err, "agents")
	}
	for i := range ps {
		ps[i].TokenHash = nil
	}
	return ps, nil
}

// agentByRef finds an agent of ws by id or name.
func agentByRef(ctx context.Context, tx store.Tx, ws, idOrName string) (memory.Principal, error) {
	var p memory.Principal
	var err error
	if memory.ValidID(idOrName) {
		p, err = tx.GetPrincipal(ctx, store.PrincipalFind{Workspace: ws, ID: idOrName})
	} else {
		p, err = tx.GetPrincipal(ctx, store.PrincipalFind{Workspace: ws, Name: idOrName})
	}
	if err == nil && p.Kind != memory.KindAgent {
		err = store.ErrNotFound
	}
	return p, err
}

// RotateAgent gives an agent, by id or name, a new token; the old one
// stops working at once. A revoked agent is reinstated: rotation is how a
// revoked (or imported) agent's name is used again, keeping its principal
// id and so its records.
func (s *Service) RotateAgent(ctx context.Context, by memory.Principal, idOrName string) (CreatedPrincipal, error) {
	if err := requireOperator(by); err != nil {
		return CreatedPrincipal{}, err
	}
	var out CreatedPrincipal
	err := s.tx(ctx, "agent", func(tx store.Tx) error {
		p, err := agentByRef(ctx, tx, by.Workspace, idOrName)
		if err != nil {
			return err
		}
		token, hash := newToken(p.ID)
		if err := tx.SetCredential(ctx, by.Workspace, p.ID, hash); err != nil {
			return err
		}
		now := s.clock()
		_, err = appendAudit(ctx, tx, by.Workspace, by, "", "agent.rotate", now,
			map[string]any{"principal_id": p.ID, "name": p.Name, "reinstated": p.Revoked()})
		p.RevokedAt, p.TokenHash = nil, nil
		out = CreatedPrincipal{Principal: p, Token: token}
		return err
	})
	if err != nil {
		return CreatedPrincipal{}, err
	}
	return out, nil
}

// RevokeAgent revokes an agent's token, by id or name.
func (s *Service) RevokeAgent(ctx context.Context, by memory.Principal, idOrName string) (memory.Principal, error) {
	if err := requireOperator(by); err != nil {
		return memory.Principal{}, err
	}
	var out memory.Principal
	err := s.tx(ctx, "agent", func(tx store.Tx) error {
		p, err := agentByRef(ctx, tx, by.Workspace, idOrName)
		if err != nil {
			return err
		}
		if p.Revoked() {
			out = p
			return nil
		}
		now := s.clock()
		if err := tx.RevokePrincipal(ctx, by.Workspace, p.ID, now); err != nil {
			return err
		}
		p.RevokedAt = &now
		out = p
		_, err = appendAudit(ctx, tx, by.Workspace, by, "", "agent.revoke", now, map[string]any{"principal_id": p.ID, "name": p.Name})
		return err
	})
	out.TokenHash = nil
	return out, err
}

// LocalOperator is the principal the CLI acts as when it opens the data
// directory directly (whoever can read the database files is an
// operator) and the workspace has no operator of its own yet. Its id is
// not a UUID, so no principal can ever own what it writes, and its name
// is reserved.
func LocalOperator(ws string) memory.Principal {
	return memory.Principal{ID: "cli", Workspace: ws, Kind: memory.KindOperator, Name: "cli"}
}

// CLIOperator is the operator the CLI acts as on workspace ws: its first
// operator that is not revoked (the bootstrap operator, normally), so that
// what the CLI writes is attributed to a real operator principal; else
// LocalOperator.
func (s *Service) CLIOperator(ctx context.Context, ws string) (memory.Principal, error) {
	ops, err := s.store.ListPrincipals(ctx, ws, memory.KindOperator)
	if err != nil {
		return memory.Principal{}, storeErr(err, "operators")
	}
	for _, p := range ops {
		if !p.Revoked() {
			p.TokenHash = nil
			return p, nil
		}
	}
	return LocalOperator(ws), nil
}

// reservedNames are the names of memgate's own actors (the CLI, the
// system principal, the bootstrap operator): no agent or operator may be
// created under them, so an audit entry or a record's writer name never
// passes one for another.
var reservedNames = []string{"cli", "system", "memgate", "operator", "gateway"}

func reservedName(name string) bool {
	return slices.Contains(reservedNames, strings.ToLower(name))
}

// LocalAgent is the agent named name, for processes that open the data
// directory directly and act as an agent (memgate mcp over stdio): the
// agent must exist and not be revoked.
func (s *Service) LocalAgent(ctx context.Context, ws, name string) (memory.Principal, error) {
	p, err := s.store.GetPrincipal(ctx, store.PrincipalFind{Workspace: ws, Name: name})
	if errors.Is(err, store.ErrNotFound) || err == nil && p.Kind != memory.KindAgent {
		return memory.Principal{}, fault.New(fault.NotFound, "no agent with this name in workspace "+ws+
			"; create one with: memgate agents create --name NAME --trust standard")
	}
	if err != nil {
		return memory.Principal{}, storeErr(err, "agent")
	}
	if p.Revoked() {
		return memory.Principal{}, fault.New(fault.Unauthenticated, "this agent's token was revoked; create a new agent")
	}
	p.TokenHash = nil
	return p, nil
}

func requireOperator(p memory.Principal) error {
	if p.Kind != memory.KindOperator {
		return fault.New(fault.PermissionDenied, "operator access required")
	}
	return nil
}

func validName(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
