package corpus

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/ragd/ragd/internal/atomicfile"
)

// ErrCheckpoint is wrapped by errors about a checkpoint that cannot be used
// for the input at hand (another input, a shrunk or rewritten file).
var ErrCheckpoint = errors.New("corpus: checkpoint does not match the input")

// Checkpoint persists how far a resumable ingestion got, so `ragd ingest`
// can continue after a crash or Ctrl-C without re-sending what the stores
// already accepted. The file is small JSON, replaced atomically (write to a
// temporary file, fsync, rename, fsync the directory), so it is either the
// old or the new position, never a torn write.
//
// Usage: Load; if the position is non-zero, SeekTo it and Read with
// ReadOptions.Start set to it; after each batch the pipeline accepted, Save
// the Next() of the batch's last line; Remove when the input is done.
// Documents of a batch in flight at a crash are sent again on resume, which
// is harmless because Upsert replaces by id.
type Checkpoint struct {
	// Path is the checkpoint file, conventionally INPUT.ckpt.
	Path string
	// Input identifies the input (an absolute path); a checkpoint written
	// for another input is rejected.
	Input string
	// Now stamps saves; nil means time.Now.
	Now func() time.Time
}

type checkpointFile struct {
	Input     string    `json:"input"`
	Line      int       `json:"line"`
	Offset    int64     `json:"offset"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Load returns the saved position, or the zero Position when there is no
// checkpoint file. A checkpoint for a different input, or past the end of
// an input of inputSize bytes (pass -1 to skip that check), wraps
// ErrCheckpoint.
func (c *Checkpoint) Load(inputSize int64) (Position, error) {
	b, err := os.ReadFile(c.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return Position{}, nil
	}
	if err != nil {
		return Position{}, fmt.Errorf("corpus: checkpoint: %w", err)
	}
	var f checkpointFile
	if err := json.Unmarshal(b, &f); err != nil {
		return Position{}, fmt.Errorf("%w: %s is not a checkpoint file: %v", ErrCheckpoint, c.Path, err)
	}
	if f.Input != c.Input {
		return Position{}, fmt.Errorf("%w: %s was written for %q, not %q", ErrCheckpoint, c.Path, f.Input, c.Input)
	}
	if f.Line < 0 || f.Offset < 0 {
		return Position{}, fmt.Errorf("%w: %s holds a negative position", ErrCheckpoint, c.Path)
	}
	if inputSize >= 0 && f.Offset > inputSize {
		return Position{}, fmt.Errorf("%w: offset %d is past the end of the input (%d bytes)", ErrCheckpoint, f.Offset, inputSize)
	}
	return Position{Line: f.Line, Offset: f.Offset}, nil
}

// Save records pos atomically.
func (c *Checkpoint) Save(pos Position) error {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	b, err := json.Marshal(checkpointFile{Input: c.Input, Line: pos.Line, Offset: pos.Offset, UpdatedAt: now().UTC()})
	if err != nil {
		return fmt.Errorf("corpus: checkpoint: %w", err)
	}
	if err := atomicfile.WriteBytes(c.Path, append(b, '\n')); err != nil {
		return fmt.Errorf("corpus: checkpoint: %w", err)
	}
	return nil
}

// Remove deletes the checkpoint after a complete run. A missing file is fine.
func (c *Checkpoint) Remove() error {
	if err := os.Remove(c.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("corpus: checkpoint: %w", err)
	}
	return nil
}
