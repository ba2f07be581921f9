package retriever

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Answer is what a query's caller got, as the operator counts user
// impact: an answer missing a source's list or a document (Partial), one
// given while a component was unhealthy (Degraded), or no answer for lack
// of healthy sources (Failed). A full, healthy answer is the zero Answer.
type Answer struct {
	Partial, Degraded, Failed bool
}

// AnswerOf classifies the outcome of a Retrieve call, res or err. A query
// that got no answer because a deadline it chose itself ran out
// (NotEnoughSourcesError.CallerDeadline, answered 504) is not Failed, and
// neither is an invalid or cancelled one: those say nothing about ragd,
// as for the metric ragd_retriever_query_failures_total's reasons.
func AnswerOf(res *Result, err error) Answer {
	if res != nil {
		return Answer{Partial: res.Partial, Degraded: res.Degraded}
	}
	var ne *NotEnoughSourcesError
	return Answer{Failed: errors.As(err, &ne) && !ne.CallerDeadline()}
}

// ErrNotEnoughSources means fewer stage-1 sources answered ok than the
// query's min_sources. The HTTP API maps it to 503.
var ErrNotEnoughSources = errors.New("retriever: not enough healthy sources")

// NotEnoughSourcesError carries every source's status when a query failed
// for lack of healthy sources. errors.Is(err, ErrNotEnoughSources) holds.
type NotEnoughSourcesError struct {
	Required int
	Healthy  int
	Sources  map[string]SourceStatus
}

func (e *NotEnoughSourcesError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %d of %d required answered", ErrNotEnoughSources, e.Healthy, e.Required)
	writeStatuses(&b, e.Sources, slices.Sorted(maps.Keys(e.Sources)))
	return b.String()
}

// writeStatuses appends "; name: status (error)" for each of names that
// statuses holds.
func writeStatuses(b *strings.Builder, statuses map[string]SourceStatus, names []string) {
	for _, n := range names {
		if s, ok := statuses[n]; ok {
			fmt.Fprintf(b, "; %s: %s", n, s.Status)
			if s.Error != "" {
				fmt.Fprintf(b, " (%s)", s.Error)
			}
		}
	}
}

// Unwrap returns ErrNotEnoughSources.
func (e *NotEnoughSourcesError) Unwrap() error { return ErrNotEnoughSources }

// CallerDeadline reports whether the query's own deadline is why too few
// sources answered: every stage-1 source that was asked and did not answer
// ran out of a deadline the request chose (caller_deadline). The sources
// are not at fault: the failure is counted as caller_deadline rather than
// not_enough_sources, and the HTTP API answers 504 rather than 503.
func (e *NotEnoughSourcesError) CallerDeadline() bool {
	n := 0
	for _, name := range stage1 {
		switch e.Sources[name].Status {
		case StatusCallerDeadline:
			n++
		case StatusError, StatusTimeout, StatusCircuitOpen, StatusShed:
			return false
		}
	}
	return n > 0
}
