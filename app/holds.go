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

// savedBreakers is the breakers as the API acts on them: a hold or a
// release returns once holds.json says what it did. A breaker's
// transitions are delivered (and saved, by observeConsole) by whichever
// goroutine finds its queue idle, so an action made while another action
// on the same breaker was being delivered returned before its own save,
// and a kill -9 then lost an acknowledged release (issue 29 item 2). The
// save after the action reads the state current then, under the writers'
// lock: it is never older than the action.
type savedBreakers struct {
	*breaker.Registry
	holds *holdFile
}

// Hold holds the breaker and saves the holds.
func (b savedBreakers) Hold(name string, m breaker.Manual) (breaker.Snapshot, error) {
	s, err := b.Registry.Hold(name, m)
	return s, b.save(err)
}

// ForceCloseBy closes the breaker, ending a hold, and saves the holds.
func (b savedBreakers) ForceCloseBy(name string, m breaker.Manual) (breaker.Snapshot, error) {
	s, err := b.Registry.ForceCloseBy(name, m)
	return s, b.save(err)
}

func (b savedBreakers) save(err error) error {
	if err != nil {
		return err
	}
	if serr := b.holds.save(b.Registry.Snapshot); serr != nil {
		return fmt.Errorf("app: the maintenance holds were not saved (a restart would not see this change): %w", serr)
	}
	return nil
}
