package main

import (
	"errors"
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

// loadConfig reads path. The default path may be absent: then the built-in
// defaults apply, with auth off only if allowNoAuth (offline commands such
// as eval, which open no listener).
func loadConfig(cmd *cobra.Command, path string, allowNoAuth bool) (*config.Config, error) {
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) && !cmd.Flags().Changed("config") {
		c := config.Default()
		if allowNoAuth {
			off := false
			c.Auth.Enabled = &off
		}
		return &c, c.Validate()
	}
	return config.Load(path)
}
