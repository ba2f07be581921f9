package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/embedder/builtin/modelcache"
	"github.com/ragd/ragd/embedder/hashing"
)

// Fallback says that ragd serves on the hashing embedder because the
// configured built-in model could not be had: which model, why, and the
// command that fixes it. Only `ragd serve` falls back
// (Options.ModelFallback); every other command fails with the same reason
// and fix.
type Fallback struct {
	Model string `json:"model"`
	// Reason is short ("not in the model cache; Hugging Face unreachable");
	// the start-up log has the whole error.
	Reason string `json:"reason"`
	// Fix says how to install the model (online and offline); Command is
	// its short form, for the health report.
	Fix     string `json:"fix"`
	Command string `json:"command"`
}

// Detail is the one-line form for the health report and `ragd status`
// (which keep 200 bytes).
func (f *Fallback) Detail() string {
	return fmt.Sprintf("FALLBACK to the hashing embedder: %s unavailable (%s); run %s", f.Model, f.Reason, f.Command)
}

// EmbedderOptions qualify OpenEmbedders.
type EmbedderOptions struct {
	// Logger receives warnings; nil discards.
	Logger *slog.Logger
	// Fallback lets a missing built-in model fall back to the hashing
	// embedder (Embedders.Fallback says why) instead of failing.
	Fallback bool
	// PullProgress receives the progress of a model pulled at start; nil
	// shows none.
	PullProgress io.Writer
	// Cache is the model cache; nil means modelcache.New() (the
	// RAGD_MODEL_CACHE directory, Hugging Face or RAGD_MODEL_BASE_URL).
	Cache *modelcache.Cache
}

// ErrModel is matched by the errors of a built-in model that could not be
// had (not in the cache and not pulled, unreadable files); their text says
// why and names the command that fixes it.
var ErrModel = errors.New("app: the built-in embedder's model is not available")

// modelError is why a built-in model could not be had: a short reason, the
// fix command, the long form of both and the cause.
type modelError struct {
	model   string
	reason  string // short, for the health report
	fix     string // how to install the model
	command string // the fix's short form
	details string // the long form: the cause's text, where to put the model
	err     error
}

func (e *modelError) Error() string {
	return fmt.Sprintf("app: embedder (builtin): model %s is not available: %s (%s). Fix: %s", e.model, e.reason, e.details, e.fix)
}

func (e *modelError) Unwrap() []error { return []error{ErrModel, e.err} }

// modelDir finds the model's directory: embedder.model_dir, or the model
// cache's copy, pulled first (within embedder.pull_timeout_s) when the cache
// lacks it and ragd pins a download for it. Errors meaning "the model is
// not here" are *modelError.
func modelDir(ctx context.Context, cfg *config.Config, o EmbedderOptions) (dir, name string, err error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	e := cfg.Embedder
	if e.ModelDir != "" {
		name = e.Model
		if name == "" {
			name = e.ModelDir
		}
		return e.ModelDir, name, nil
	}
	name, err = modelcache.Canonical(e.BuiltinModel())
	if err != nil {
		return "", e.BuiltinModel(), fmt.Errorf("app: embedder.model: %w", err)
	}
	cache := o.Cache
	if cache == nil {
		if cache, err = modelcache.New(); err != nil {
			return "", name, &modelError{model: name, reason: "no model cache directory", fix: "set " + modelcache.EnvCache,
				command: "export " + modelcache.EnvCache + "=DIR", details: err.Error(), err: err}
		}
	}
	notHere := func(reason, details string, err error) *modelError {
		return &modelError{model: name, reason: reason, fix: fixFor(name), command: commandFor(name), details: details + "; model cache " + cache.Dir, err: err}
	}
	if dir, err = cache.Path(name); err == nil {
		return dir, name, nil
	}
	switch {
	case !errors.Is(err, modelcache.ErrNotCached):
		return "", name, notHere("model cache unreadable", err.Error(), err)
	case e.PullTimeoutS == 0:
		return "", name, notHere("not cached; pulling at start is off", "embedder.pull_timeout_s is 0", err)
	case !known(name):
		return "", name, notHere("not cached; no pinned download", "ragd pins no download for it: "+err.Error(), err)
	}
	timeout := time.Duration(e.PullTimeoutS) * time.Second
	o.Logger.Info("app: the built-in model is not in the model cache; pulling it", slog.String("model", name),
		slog.String("cache", cache.Dir), slog.Duration("timeout", timeout))
	pull := *cache
	pull.Progress = o.PullProgress
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if dir, err = pull.Pull(pctx, name); err != nil {
		switch {
		case ctx.Err() != nil:
			return "", name, ctx.Err()
		case pctx.Err() != nil:
			return "", name, notHere(fmt.Sprintf("pull took longer than pull_timeout_s (%v)", timeout), err.Error(), err)
		case errors.Is(err, modelcache.ErrUnreachable):
			return "", name, notHere("not cached; model host unreachable", err.Error(), err)
		}
		return "", name, notHere("not cached; pull failed", err.Error(), err)
	}
	return dir, name, nil
}

// known reports whether ragd pins a download of the model called name.
func known(name string) bool {
	return slices.ContainsFunc(modelcache.KnownModels(), func(m modelcache.Model) bool { return m.Name == name })
}

// commandFor is fixFor's short form.
func commandFor(name string) string {
	if known(name) {
		return "ragd model pull " + name
	}
	return "ragd model import PATH --name " + name
}

// fixFor is the command that installs the model called name: a pull for
// a model ragd pins (or, offline, an import of a copy), an import
// otherwise.
func fixFor(name string) string {
	if known(name) {
		return fmt.Sprintf("`ragd model pull %s` (offline: `ragd model import PATH --name %s`), then restart", name, name)
	}
	return fmt.Sprintf("`ragd model import PATH --name %s`, then restart", name)
}

// hashingFallback is the hashing embedder standing in for a missing model;
// the reason goes to the log, loudly.
func hashingFallback(cfg *config.Config, me *modelError, logger *slog.Logger) (*Embedders, error) {
	h, err := hashing.New(hashing.Config{Dimension: cfg.Embedder.Dimension})
	if err != nil {
		return nil, fmt.Errorf("app: embedder (hashing fallback): %w", err)
	}
	fb := &Fallback{Model: me.model, Reason: me.reason, Fix: me.fix, Command: me.command}
	logger.Warn("app: SERVING WITHOUT THE BUILT-IN MODEL: the hashing embedder stands in; it matches shared words, not meaning. "+
		"Documents written meanwhile get hashing vectors: once the model is installed, ragd refuses to start on them until `ragd reembed`",
		slog.String("model", fb.Model), slog.String("reason", fb.Reason), slog.String("fix", fb.Fix), slog.String("details", me.details))
	return &Embedders{Document: h, Query: h, Identity: "kind=hashing fingerprint=" + h.Fingerprint(), Fallback: fb}, nil
}
