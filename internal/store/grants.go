package store

import (
	"encoding/json"

	"github.com/memgate/memgate/internal/memory"
)

// EncodeGrants is how both backends store a node's grants: a JSON array,
// or NULL (nil) when they are not computed yet.
func EncodeGrants(gs []memory.Grant) *string {
	if gs == nil {
		return nil
	}
	b, _ := json.Marshal(gs)
	s := string(b)
	return &s
}

// DecodeGrants is the inverse of EncodeGrants. Unreadable grants read as
// not computed, so that memgate computes them again.
func DecodeGrants(s *string) []memory.Grant {
	if s == nil {
		return nil
	}
	gs := []memory.Grant{}
	if json.Unmarshal([]byte(*s), &gs) != nil {
		return nil
	}
	return gs
}
