package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/ragd/ragd/config"
)

// defaultConfigPath is read when -c is not given and the file exists.
const defaultConfigPath = "rag.yaml"

// addConfigFlag registers -c/--config on cmd and returns where its value
// lands.
func addConfigFlag(cmd *cobra.Command) *string {
	return cmd.Flags().StringP("config", "c", defaultConfigPath, "path to rag.yaml")
}

// defaultsSummary says what the built-in defaults are, for the messages
// given when no rag.yaml is found.
const defaultsSummary = "embedded stores under ./data, the built-in model all-MiniLM-L6-v2 (from the model cache), listening on 127.0.0.1:8080, auth on"

// loadConfig reads path. The default path may be absent: then the built-in
// defaults apply, with auth off only if allowNoAuth (offline commands such
// as eval, which open no listener); a command that serves needs keys, so
// it stops and says why.
func loadConfig(cmd *cobra.Command, path string, allowNoAuth bool) (*config.Config, error) {
	_, err := os.Stat(path)
	if !errors.Is(err, fs.ErrNotExist) || cmd.Flags().Changed("config") {
		return config.Load(path)
	}
	wd, _ := os.Getwd()
	if !allowNoAuth {
		return nil, fmt.Errorf("no %s in %s and no -c/--config given. The built-in defaults would apply (%s), "+
			"but auth needs API keys and the defaults have none. Create %s with auth.keys, or with auth: {enabled: false} "+
			"to run without auth on loopback (the repository's rag.yaml is the quickstart), or pass -c FILE",
			defaultConfigPath, wd, defaultsSummary, defaultConfigPath)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "ragd: no %s in %s; using the built-in defaults (%s; auth off: this command opens no listener)\n",
		defaultConfigPath, wd, defaultsSummary)
	c := config.Default()
	off := false
	c.Auth.Enabled = &off
	return &c, c.Validate()
}
