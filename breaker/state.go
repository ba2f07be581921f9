package breaker

import "fmt"

// State is a breaker's position. The zero value is Closed. States are
// ordered from best to worst, so a health roll-up can take the maximum.
type State uint8

// The three breaker states.
const (
	// Closed passes every call through and counts failures.
	Closed State = iota
	// HalfOpen admits a bounded number of trial calls.
	HalfOpen
	// Open rejects every call with an *OpenError.
	Open
)

// String returns "closed", "half_open" or "open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case HalfOpen:
		return "half_open"
	case Open:
		return "open"
	default:
		return fmt.Sprintf("State(%d)", uint8(s))
	}
}

// MarshalText encodes the state as its String form.
func (s State) MarshalText() ([]byte, error) {
	switch s {
	case Closed, HalfOpen, Open:
		return []byte(s.String()), nil
	default:
		return nil, fmt.Errorf("breaker: invalid state %d", uint8(s))
	}
}

// UnmarshalText decodes "closed", "half_open" or "open".
func (s *State) UnmarshalText(text []byte) error {
	v, err := ParseState(string(text))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseState is the inverse of State.String.
func ParseState(text string) (State, error) {
	switch text {
	case "closed":
		return Closed, nil
	case "half_open":
		return HalfOpen, nil
	case "open":
		return Open, nil
	default:
		return 0, fmt.Errorf("breaker: unknown state %q", text)
	}
}
