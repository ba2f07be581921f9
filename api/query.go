package api

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// query serves POST /v1/query: the body is a retriever.Query, the answer a
// retriever.Result.
func (s *Server) query() echo.HandlerFunc {
	return func(c echo.Context) error {
		var q retriever.Query
		if body, ok := c.Get(ctxBody).([]byte); ok {
			if err := checkQueryBounds(body); err != nil {
				return err
			}
		}
		if err := s.decodeJSON(c, &q); err != nil {
			return err
		}
		if err := principal(c).scopeQuery(&q); err != nil {
			return err
		}
		if strings.TrimSpace(q.Text) == "" && len(q.Vector) == 0 {
			return fieldError(CodeEmptyQuery, "text", "text or vector is required")
		}
		// Retrieve validates q once (a *retriever.QueryError is a 400).
		res, err := s.cfg.Searcher.Retrieve(principal(c).callContext(c.Request().Context()), q)
		if err != nil {
			return err
		}
		if res == nil {
			return errors.New("api: searcher returned neither a result nor an error")
		}
		if n := clampNonFinite(res); n > 0 {
			s.log.LogAttrs(c.Request().Context(), slog.LevelWarn, "api: clamped non-finite numbers in a query result",
				slog.String("request_id", requestID(c)), slog.Int("count", n))
		}
		return s.writeJSON(c, http.StatusOK, res)
	}
}

// callContext marks ctx as an operator's call (spi.AsOperator) when p is
// an admin bound to no tenant (the anonymous admin with auth off too):
// what only an operator decides for every tenant, such as waking a
// dormant store, its queries may do.
func (p *Principal) callContext(ctx context.Context) context.Context {
	if p.Role == config.RoleAdmin && p.Tenant == "" {
		return spi.AsOperator(ctx)
	}
	return ctx
}

// scopeQuery binds q to p's tenant: a key bound to a tenant queries that
// tenant only, and naming another is tenant_forbidden.
func (p *Principal) scopeQuery(q *retriever.Query) error {
	if p.Tenant == "" {
		return nil
	}
	if q.Tenant != "" && q.Tenant != p.Tenant {
		e := newError(http.StatusForbidden, CodeTenantForbidden, "this API key is bound to another tenant")
		e.Detail.Field = "tenant"
		return e
	}
	q.Tenant = p.Tenant
	return nil
}

// clampNonFinite replaces every NaN and infinity of res (scores, explain
// contributions, fusion weights) with a finite number, which JSON can
// carry: ±Inf becomes ±math.MaxFloat64, NaN becomes 0. It returns how many
// it replaced. Query validation bounds weights so this should not happen;
// it keeps a backend's odd score from turning into a 500.
func clampNonFinite(res *retriever.Result) int {
	n := 0
	fix := func(f *float64) {
		switch {
		case math.IsNaN(*f):
			*f = 0
		case math.IsInf(*f, 1):
			*f = math.MaxFloat64
		case math.IsInf(*f, -1):
			*f = -math.MaxFloat64
		default:
			return
		}
		n++
	}
	for i := range res.Hits {
		h := &res.Hits[i]
		fix(&h.Score)
		for _, c := range h.Explain {
			if c != nil {
				fix(&c.RawScore)
				fix(&c.Contribution)
			}
		}
	}
	for name, w := range res.Fusion.Weights {
		fix(&w)
		res.Fusion.Weights[name] = w
	}
	if x := res.Fusion.Expand; x != nil {
		fix(&x.Weight)
	}
	fix(&res.TookMS)
	return n
}
