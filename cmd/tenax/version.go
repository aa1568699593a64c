package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// stampedVersion is the version a release build stamps with
// -ldflags "-X main.stampedVersion=v1.2.3" (release/build does); empty in
// every other build, which then reports the module version Go recorded.
var stampedVersion string

// stampedRevision is the commit a release build stamps with
// -ldflags "-X main.stampedRevision=…", for builds where Go records no VCS
// information (a git worktree, -buildvcs=false); the recorded one wins.
var stampedRevision string

// version is the version this binary reports and records in the jobs it
// creates.
var version = currentBuild().Version

// build describes the binary: what `tenax version` prints.
type build struct {
	// Version is the stamped release version, else the module version Go
	// recorded (v1.2.3 for `go install …@v1.2.3`, a pseudo-version
	// from the VCS in a clone), else "devel".
	Version string `json:"version"`
	// Revision is the VCS commit the binary was built from; empty when Go
	// recorded none (go install …@version, -buildvcs=false).
	Revision string `json:"revision,omitempty"`
	// Modified says the work tree had changes not in Revision.
	Modified bool `json:"modified,omitempty"`
	// Time is the commit time of Revision, RFC 3339.
	Time      string `json:"commit_time,omitempty"`
	GoVersion string `json:"go"`
	Platform  string `json:"platform"`
}

// currentBuild reads the running binary's build information.
func currentBuild() build {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return buildFrom(stampedVersion, stampedRevision, bi)
}

// buildFrom is currentBuild from its inputs: the ldflags stamp and the
// build information (nil when the binary carries none).
func buildFrom(stamp, revision string, bi *debug.BuildInfo) build {
	b := build{Version: stamp, Revision: revision, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		if b.Version == "" {
			b.Version = "devel"
		}
		return b
	}
	if bi.GoVersion != "" {
		b.GoVersion = bi.GoVersion
	}
	if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		case "vcs.time":
			b.Time = s.Value
		}
	}
	return b
}

// text is the one line `tenax version` and `tenax --version` print.
func (b build) text() string {
	var s strings.Builder
	fmt.Fprintf(&s, "tenax %s", b.Version)
	if b.Revision != "" {
		fmt.Fprintf(&s, " (revision %s", b.Revision)
		if b.Modified {
			s.WriteString(", modified")
		}
		if b.Time != "" {
			fmt.Fprintf(&s, ", %s", b.Time)
		}
		s.WriteString(")")
	}
	fmt.Fprintf(&s, " %s %s\n", b.GoVersion, b.Platform)
	return s.String()
}

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the tenax version, the commit it was built from and its Go version",
		Long: `Print the tenax version, the VCS revision it was built from (and whether the work
tree had changes), the commit's time, the Go version and the platform. --json prints
them as one JSON object (docs/records.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := currentBuild()
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), versionJSON{Schema: versionSchema, build: b})
			}
			_, err := fmt.Fprint(cmd.OutOrStdout(), b.text())
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (docs/records.md)")
	return cmd
}

// versionSchema names the shape of `tenax version --json`.
const versionSchema = "tenax.version/v1"

type versionJSON struct {
	Schema string `json:"schema"`
	build
}

// writeJSON writes v as indented JSON and a newline.
func writeJSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}
