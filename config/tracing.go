package config

import "net/url"

// TracingConfig exports OpenTelemetry traces over OTLP/HTTP: one span per
// HTTP request, per retrieval source call, for fusion, expansion and
// hydration, and per store write. Spans carry names, statuses, breaker
// states and counts, never query text or document bodies. A request's span
// continues the caller's W3C traceparent. Off by default.
type TracingConfig struct {
	Enabled bool `yaml:"enabled"`
	// Endpoint is the collector's OTLP/HTTP traces URL; http:// sends
	// without TLS.
	Endpoint string `yaml:"endpoint"`
	// SampleRatio is the share of new traces recorded (0 to 1); a request
	// that arrives with a sampled traceparent is always recorded.
	SampleRatio float64 `yaml:"sample_ratio"`
	// ServiceName is the service.name resource attribute.
	ServiceName string `yaml:"service_name"`
	// TimeoutMS bounds each export.
	TimeoutMS int `yaml:"timeout_ms"`
}

// DefaultTracing is the tracing section's default: off, aimed at a
// collector on loopback.
func DefaultTracing() TracingConfig {
	return TracingConfig{Endpoint: "http://127.0.0.1:4318/v1/traces", SampleRatio: 1, ServiceName: "ragd", TimeoutMS: 10000}
}

func (t TracingConfig) validate(bad func(key, format string, args ...any)) {
	if !t.Enabled {
		return
	}
	if u, err := url.Parse(t.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("tracing.endpoint", "must be an http:// or https:// URL, got %q", t.Endpoint)
	}
	if t.SampleRatio < 0 || t.SampleRatio > 1 {
		bad("tracing.sample_ratio", "must be between 0 and 1, got %v", t.SampleRatio)
	}
	if t.ServiceName == "" {
		bad("tracing.service_name", "must not be empty")
	}
	if t.TimeoutMS <= 0 {
		bad("tracing.timeout_ms", "must be > 0, got %d", t.TimeoutMS)
	}
}
