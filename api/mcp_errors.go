package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
)

// mcpErrorCode is the JSON-RPC error code of a request the HTTP layer
// refused before MCP saw it (no or a wrong key, a role that may not call
// it, too many requests in flight): one of the codes JSON-RPC leaves to
// servers. The message is ragd's "code: message"; data is ragd's error
// object, request id included.
const mcpErrorCode = -32001

// mcpRPCError is a JSON-RPC 2.0 error response. Its id is null: the
// request was refused before MCP read its message.
type mcpRPCError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int         `json:"code"`
		Message string      `json:"message"`
		Data    ErrorDetail `json:"data"`
	} `json:"error"`
}

// mcpErrors answers the errors of the middleware in front of the MCP
// handler (authentication, the body's limit and type, the in-flight limit)
// and readMCP's refusals of the message as MCP clients read them:
// the HTTP status and headers of every other route (401 with
// WWW-Authenticate, 403, 429 with Retry-After), and a JSON-RPC error body
// that carries ragd's message, where the HTTP API answers its own error
// shape, which an MCP client can only report as "Server returned an
// error response".
func (s *Server) mcpErrors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if err == nil || c.Response().Committed {
			return err
		}
		ae := translate(err)
		if ae.Status >= 500 {
			return err // logged and answered by handleError
		}
		c.Set(ctxErrorCode, ae.Detail.Code)
		var out mcpRPCError
		out.JSONRPC, out.ID = "2.0", json.RawMessage("null")
		out.Error.Code = mcpErrorCode
		out.Error.Data = ae.Detail
		out.Error.Data.RequestID = requestID(c)
		out.Error.Message = ae.Detail.Code + ": " + ae.Detail.Message + " (request id " + out.Error.Data.RequestID + ")"
		switch ae.Status {
		case http.StatusUnauthorized:
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="ragd"`)
		case http.StatusTooManyRequests:
			c.Response().Header().Set("Retry-After", strconv.Itoa(1))
		}
		return s.writeJSON(c, ae.Status, out)
	}
}
