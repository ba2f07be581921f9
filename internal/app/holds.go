package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/internal/atomicfile"
)

// holdFile keeps the maintenance holds in data_dir, so that a restart
// during maintenance does not send queries to the backend under repair:
// one JSON object, breaker name to hold, rewritten on every hold and
// release.
type holdFile struct {
	path string
}

// save writes the holds of snaps (replacing the file through a rename).
func (h *holdFile) save(snaps []breaker.Snapshot) error {
	held := map[string]breaker.Hold{}
	for _, s := range snaps {
		if s.Hold != nil {
			held[s.Name] = *s.Hold
		}
	}
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
