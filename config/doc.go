// Package config loads and validates rag.yaml, ragd's single configuration
// file.
//
// Loading follows the shape of Prometheus' config package: defaults first,
// then the file on top, then validation of every value with a message that
// names the offending key. Unknown keys are an error that names the key and
// its line, never dropped silently. ${VAR} and ${VAR:-default} references
// in any scalar value are replaced from the environment before decoding, so
// secrets and DSNs can stay out of the file; a reference to an unset
// variable without a default is an error.
package config
