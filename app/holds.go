package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/internal/atomicfile"
)

// Steps of a save of the holds, for holdsSaveHook.
const (
	// holdsWaiting: the save has done all it does before waiting for the
	// saves ahead of it.
	holdsWaiting = "waiting"
	// holdsRead: the save read the state it writes, and writes it next.
	holdsRead = "read"
)

// holdsSaveHook, when set (by tests), is called at each step of a save.
var holdsSaveHook func(step string)

func holdsHook(step string) {
	if holdsSaveHook != nil {
		holdsSaveHook(step)
	}
}

// holdFile keeps the maintenance holds in data_dir, so that a restart
// during maintenance does not send queries to the backend under repair:
// one JSON object, breaker name to hold, rewritten on every hold and
// release.
//
// Invariant: once every save has returned, the file names exactly the
// breakers held at the time of the last one. Saves of different breakers'
// transitions run at once (each breaker delivers its own), so each save
// reads the state under mu, the lock that orders the writes: a save that
// read the state earlier can never land after one that read it later.
type holdFile struct {
	path string
	mu   sync.Mutex // serialises save: read the state, write it
}

// save writes the holds current now, read from state under the writers'
// lock (replacing the file through a rename).
func (h *holdFile) save(state func() []breaker.Snapshot) error {
	holdsHook(holdsWaiting)
	h.mu.Lock()
	defer h.mu.Unlock()
	held := map[string]breaker.Hold{}
	for _, s := range state() {
		if s.Hold != nil {
			held[s.Name] = *s.Hold
		}
	}
	holdsHook(holdsRead)
	b, err := json.MarshalIndent(held, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(h.path, append(b, '\n')); err != nil {
		return fmt.Errorf("app: holds: %w", err)
	}
	return nil
}

// load reads the holds; a missing file holds none.
func (h *holdFile) load() (map[string]breaker.Hold, error) {
	b, err := os.ReadFile(h.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("app: holds: %w", err)
	}
	held := map[string]breaker.Hold{}
	if err := json.Unmarshal(b, &held); err != nil {
		return nil, fmt.Errorf("app: holds: %s: %w", h.path, err)
	}
	return held, nil
}
