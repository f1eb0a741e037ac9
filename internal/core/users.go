package core

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// Gateway users (SPEC §2) are principals of kind user named "user:<id>",
// so that their names never collide with agents'. They authenticate with
// a user key sent in the request body; the key is stored as a sha256 and
// compared in constant time.
const (
	userNamePrefix = "user:"
	userKeyPrefix  = "uk_"
)

// GatewayUser is a gateway user as operators see it.
type GatewayUser struct {
	UserID    string     `json:"user_id"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// CreatedUser is a new gateway user with its key, which is shown once.
type CreatedUser struct {
	UserID  string `json:"user_id"`
	UserKey string `json:"user_key"`
}

// errBadUser is the one answer to an unknown user, a wrong key and a
// revoked user alike.
var errBadUser = fault.New(fault.Unauthenticated, "unknown user or wrong user key")

// userHashFloor is compared against when the user does not exist, so that
// an unknown user costs the same as a wrong key.
var userHashFloor = sha256.Sum256([]byte("memgate: no such user"))

// ValidUserID reports whether id can name a gateway user: 1-128
// printable characters without spaces.
func ValidUserID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if c <= ' ' || c == 0x7f || c > '~' {
			return false
		}
	}
	return true
}

func userOf(p memory.Principal) string { return strings.TrimPrefix(p.Name, userNamePrefix) }

// UserConversation names a session of the gateway user p.
func UserConversation(p memory.Principal, app, project, session string) store.Conversation {
	return store.Conversation{UserID: userOf(p), AppID: app, ProjectID: project, SessionID: session}
}

// CreateUser registers a gateway user in the operator's workspace.
func (s *Service) CreateUser(ctx context.Context, by memory.Principal, userID string) (CreatedUser, error) {
	if err := requireOperator(by); err != nil {
		return CreatedUser{}, err
	}
	if userID == "" {
		// A runtime that keeps no ids of its own gets one.
		userID = "user-" + strings.ReplaceAll(memory.NewID(), "-", "")[16:]
	}
	if !ValidUserID(userID) {
		return CreatedUser{}, fault.Field("user_id", "must be 1-128 printable ASCII characters without spaces")
	}
	if len(gate.Screen(userID, []string{gate.PIISecret})) > 0 {
		return CreatedUser{}, fault.Field("user_id", "looks like a secret or API key; choose a plain id")
	}
	now := s.clock()
	p := memory.Principal{ID: memory.NewID(), Workspace: by.Workspace, Kind: memory.KindUser, Name: userNamePrefix + userID,
		Trust: memory.Standard, CreatedAt: now}
	var key string
	key, p.TokenHash = newUserKey(p.ID)
	err := s.tx(ctx, "user "+userID, func(tx store.Tx) error {
		if err := tx.InsertPrincipal(ctx, p); err != nil {
			return err
		}
		_, err := appendAudit(ctx, tx, by.Workspace, by, "", "user.create", now,
			map[string]any{"principal_id": p.ID, "user_id": userID})
		return err
	})
	if err != nil {
		return CreatedUser{}, err
	}
	return CreatedUser{UserID: userID, UserKey: key}, nil
}

// newUserKey returns a user key and its stored sha256. The key names its
// principal ("uk_<principal id without dashes>_<secret>"), so the gateway
// finds the user's workspace from the key alone.
func newUserKey(principalID string) (key string, hash []byte) {
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	key = userKeyPrefix + strings.ReplaceAll(principalID, "-", "") + "_" + base64.RawURLEncoding.EncodeToString(secret[:])
	sum := sha256.Sum256([]byte(key))
	return key, sum[:]
}

// userKeyPrincipal is the principal id a user key names, if it has the
// form newUserKey makes (keys made before it name none).
func userKeyPrincipal(key string) (string, bool) {
	id, _, ok := parseToken(tokenPrefix + strings.TrimPrefix(key, userKeyPrefix))
	return id, ok && strings.HasPrefix(key, userKeyPrefix)
}

// RotateUserKey gives a gateway user a new key; the old one stops working
// at once. A revoked user is reinstated: rotation is how a revoked (or
// imported) user id is used again, keeping its principal and memories.
func (s *Service) RotateUserKey(ctx context.Context, by memory.Principal, userID string) (CreatedUser, error) {
	if err := requireOperator(by); err != nil {
		return CreatedUser{}, err
	}
	var out CreatedUser
	err := s.tx(ctx, "user", func(tx store.Tx) error {
		p, err := gatewayUser(ctx, tx, by.Workspace, userID)
		if err != nil {
			return err
		}
		key, hash := newUserKey(p.ID)
		if err := tx.SetCredential(ctx, by.Workspace, p.ID, hash); err != nil {
			return err
		}
		out = CreatedUser{UserID: userID, UserKey: key}
		_, err = appendAudit(ctx, tx, by.Workspace, by, "", "user.rotate", s.clock(),
			map[string]any{"principal_id": p.ID, "user_id": userID, "reinstated": p.Revoked()})
		return err
	})
	if err != nil {
		return CreatedUser{}, err
	}
	return out, nil
}

// ListUsers lists the gateway users of the operator's workspace.
func (s *Service) ListUsers(ctx context.Context, by memory.Principal) ([]GatewayUser, error) {
	if err := requireOperator(by); err != nil {
		return nil, err
	}
	ps, err := s.store.ListPrincipals(ctx, by.Workspace, memory.KindUser)
	if err != nil {
		return nil, storeErr(err, "users")
	}
	out := make([]GatewayUser, 0, len(ps))
	for _, p := range ps {
		out = append(out, GatewayUser{UserID: userOf(p), CreatedAt: p.CreatedAt, RevokedAt: p.RevokedAt})
	}
	return out, nil
}

// RevokeUser revokes a gateway user's key; the user's memories stay.
func (s *Service) RevokeUser(ctx context.Context, by memory.Principal, userID string) (GatewayUser, error) {
	if err := requireOperator(by); err != nil {
		return GatewayUser{}, err
	}
	var out GatewayUser
	err := s.tx(ctx, "user", func(tx store.Tx) error {
		p, err := gatewayUser(ctx, tx, by.Workspace, userID)
		if err != nil {
			return err
		}
		out = GatewayUser{UserID: userID, CreatedAt: p.CreatedAt, RevokedAt: p.RevokedAt}
		if p.Revoked() {
			return nil
		}
		now := s.clock()
		if err := tx.RevokePrincipal(ctx, by.Workspace, p.ID, now); err != nil {
			return err
		}
		out.RevokedAt = &now
		_, err = appendAudit(ctx, tx, by.Workspace, by, "", "user.revoke", now, map[string]any{"principal_id": p.ID, "user_id": userID})
		return err
	})
	return out, err
}

// AuthenticateUser resolves a gateway user id and key. A key that names
// its principal (newUserKey) authenticates in that principal's workspace,
// whichever it is; an older key only in workspace ws.
func (s *Service) AuthenticateUser(ctx context.Context, ws, userID, key string) (memory.Principal, error) {
	var p memory.Principal
	var err error
	if id, ok := userKeyPrincipal(key); ok {
		p, err = s.store.GetPrincipal(ctx, store.PrincipalFind{ID: id})
		if err == nil && p.Name != userNamePrefix+userID {
			err = store.ErrNotFound
		}
	} else {
		p, err = s.store.GetPrincipal(ctx, store.PrincipalFind{Workspace: ws, Name: userNamePrefix + userID})
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return memory.Principal{}, storeErr(err, "user")
	}
	want := userHashFloor[:]
	if err == nil && p.Kind == memory.KindUser {
		want = p.TokenHash
	}
	sum := sha256.Sum256([]byte(key))
	if subtle.ConstantTimeCompare(sum[:], want) != 1 || err != nil || p.Kind != memory.KindUser || p.Revoked() {
		return memory.Principal{}, errBadUser
	}
	p.TokenHash = nil
	return p, nil
}

// gatewayUser finds the principal of gateway user userID; a principal of
// another kind under that name is not found.
func gatewayUser(ctx context.Context, tx store.Tx, ws, userID string) (memory.Principal, error) {
	p, err := tx.GetPrincipal(ctx, store.PrincipalFind{Workspace: ws, Name: userNamePrefix + userID})
	if err != nil {
		return memory.Principal{}, err
	}
	if p.Kind != memory.KindUser {
		return memory.Principal{}, store.ErrNotFound
	}
	return p, nil
}
