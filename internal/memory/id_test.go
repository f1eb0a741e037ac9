package memory

import (
	"sync"
	"testing"
)

func TestNewIDIsValidAndStrictlyIncreasing(t *testing.T) {
	prev := NewID()
	for range 20000 {
		id := NewID()
		if !ValidID(id) || id[14] != '7' {
			t.Fatalf("not a UUIDv7: %s", id)
		}
		if id <= prev {
			t.Fatalf("not increasing: %s after %s", id, prev)
		}
		prev = id
	}
}

func TestNewIDConcurrentUnique(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			local := make([]string, 2000)
			for i := range local {
				local[i] = NewID()
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range local {
				if seen[id] {
					t.Errorf("duplicate id %s", id)
				}
				seen[id] = true
			}
		})
	}
	wg.Wait()
}

func TestValidID(t *testing.T) {
	for s, want := range map[string]bool{
		"01a1fc85-5c3f-7258-b28e-962ecae47228":  true,
		"01A1FC85-5C3F-7258-B28E-962ECAE47228":  false,
		"01a1fc85-5c3f-7258-b28e-962ecae4722":   false,
		"01a1fc855c3f-7258-b28e-962ecae47228-":  false,
		"01a1fc85-5c3f-7258-b28e-962ecae4722g":  false,
		"":                                      false,
		"01a1fc85-5c3f-7258-b28e-962ecae47228 ": false,
	} {
		if got := ValidID(s); got != want {
			t.Errorf("ValidID(%q) = %v", s, got)
		}
	}
}
