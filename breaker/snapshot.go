package breaker

import (
	"encoding/json"
	"time"
)

// Snapshot is a point-in-time view of a breaker for health and status
// reports. It holds names and counts only.
//
// FailureCount is, while closed, the consecutive failures so far; while open
// or half-open, the failures that tripped the breaker plus the trial
// failures since. RetryIn is non-zero only while open and not held: the
// time left before trials are admitted. Since is when the state began; Hold
// is set while a maintenance hold keeps the breaker open.
//
// In JSON, durations are integer milliseconds (RetryIn rounded up, so an
// open breaker never shows 0):
//
//	{"name":"vector","state":"open","failure_count":5,"failure_threshold":5,
//	 "opened_total":1,"reset_timeout_ms":30000,"retry_in_ms":29500,
//	 "since":"2026-12-02T10:00:00Z"}
//
// A held breaker adds "hold":{"by":"ops","reason":"pg upgrade","since":...}
// and has retry_in_ms 0.
type Snapshot struct {
	Name             string        `json:"name"`
	State            State         `json:"state"`
	FailureCount     int           `json:"failure_count"`
	FailureThreshold int           `json:"failure_threshold"`
	OpenedTotal      uint64        `json:"opened_total"`
	ResetTimeout     time.Duration `json:"-"` // encoded as reset_timeout_ms
	RetryIn          time.Duration `json:"-"` // encoded as retry_in_ms
	// Since is when the current state began (the zero time when unknown).
	Since time.Time `json:"-"` // encoded as since, omitted when zero
	// Hold is the maintenance hold keeping the breaker open, if any: it
	// admits no trial until ForceClose.
	Hold *Hold `json:"-"` // encoded as hold
}

// Hold is a maintenance hold (Breaker.Hold): who placed it, why, and when.
type Hold struct {
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
}

// snapshotJSON is Snapshot's wire form.
type snapshotJSON struct {
	Name             string     `json:"name"`
	State            State      `json:"state"`
	FailureCount     int        `json:"failure_count"`
	FailureThreshold int        `json:"failure_threshold"`
	OpenedTotal      uint64     `json:"opened_total"`
	ResetTimeoutMS   int64      `json:"reset_timeout_ms"`
	RetryInMS        int64      `json:"retry_in_ms"`
	Since            *time.Time `json:"since,omitempty"`
	Hold             *Hold      `json:"hold,omitempty"`
}

// MarshalJSON encodes the snapshot with snake_case keys and millisecond
// durations.
func (s Snapshot) MarshalJSON() ([]byte, error) {
	var since *time.Time
	if !s.Since.IsZero() {
		since = &s.Since
	}
	return json.Marshal(snapshotJSON{
		Since:            since,
		Hold:             s.Hold,
		Name:             s.Name,
		State:            s.State,
		FailureCount:     s.FailureCount,
		FailureThreshold: s.FailureThreshold,
		OpenedTotal:      s.OpenedTotal,
		ResetTimeoutMS:   ceilMillis(s.ResetTimeout),
		RetryInMS:        ceilMillis(s.RetryIn),
	})
}

// UnmarshalJSON decodes what MarshalJSON produces.
func (s *Snapshot) UnmarshalJSON(data []byte) error {
	var j snapshotJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*s = Snapshot{
		Name:             j.Name,
		State:            j.State,
		FailureCount:     j.FailureCount,
		FailureThreshold: j.FailureThreshold,
		OpenedTotal:      j.OpenedTotal,
		ResetTimeout:     time.Duration(j.ResetTimeoutMS) * time.Millisecond,
		RetryIn:          time.Duration(j.RetryInMS) * time.Millisecond,
		Hold:             j.Hold,
	}
	if j.Since != nil {
		s.Since = *j.Since
	}
	return nil
}

func ceilMillis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
