package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionComesFromTheBuild(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0cd8502abc"},
		{Key: "vcs.time", Value: "2026-11-26T22:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	tests := []struct {
		name, stamp, revision string
		bi                    *debug.BuildInfo
		want                  build
	}{
		{"no build info", "", "", nil,
			build{Version: "devel"}},
		{"go install at a tag", "", "",
			&debug.BuildInfo{GoVersion: "go1.25.3", Main: debug.Module{Version: "v1.2.3"}},
			build{Version: "v1.2.3", GoVersion: "go1.25.3"}},
		{"a clone with changes", "", "",
			&debug.BuildInfo{GoVersion: "go1.25.3", Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			build{Version: "devel", Revision: "0cd8502abc", Modified: true, Time: "2026-11-26T22:00:00Z", GoVersion: "go1.25.3"}},
		{"a release stamp wins over the module version", "v2.0.0", "",
			&debug.BuildInfo{GoVersion: "go1.25.3", Main: debug.Module{Version: "v1.2.3"}},
			build{Version: "v2.0.0", GoVersion: "go1.25.3"}},
		{"a stamped revision fills in for a build without VCS information", "v2.0.0", "feedbeef",
			&debug.BuildInfo{GoVersion: "go1.25.3", Main: debug.Module{Version: "(devel)"}},
			build{Version: "v2.0.0", Revision: "feedbeef", GoVersion: "go1.25.3"}},
		{"the recorded revision wins over the stamped one", "", "feedbeef",
			&debug.BuildInfo{GoVersion: "go1.25.3", Settings: vcs},
			build{Version: "devel", Revision: "0cd8502abc", Modified: true, Time: "2026-11-26T22:00:00Z", GoVersion: "go1.25.3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.Platform = runtime.GOOS + "/" + runtime.GOARCH
			if tt.want.GoVersion == "" {
				tt.want.GoVersion = runtime.Version()
			}
			if got := buildFrom(tt.stamp, tt.revision, tt.bi); got != tt.want {
				t.Errorf("buildFrom = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestVersionTextNamesTheRevision(t *testing.T) {
	b := build{Version: "v1.2.3", Revision: "0cd8502abc", Modified: true, Time: "2026-11-26T22:00:00Z", GoVersion: "go1.25.3", Platform: "linux/amd64"}
	want := "tenax v1.2.3 (revision 0cd8502abc, modified, 2026-11-26T22:00:00Z) go1.25.3 linux/amd64\n"
	if got := b.text(); got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}

// TestVersionFlagAndCommandAgree: --version was an unknown flag (exit 2).
func TestVersionFlagAndCommandAgree(t *testing.T) {
	var flag, command, asJSON bytes.Buffer
	if code := execute([]string{"--version"}, strings.NewReader(""), &flag, &bytes.Buffer{}); code != 0 {
		t.Fatalf("tenax --version exited %d", code)
	}
	if code := execute([]string{"version"}, strings.NewReader(""), &command, &bytes.Buffer{}); code != 0 {
		t.Fatalf("tenax version exited %d", code)
	}
	if flag.String() != command.String() || !strings.HasPrefix(flag.String(), "tenax ") {
		t.Errorf("tenax --version printed %q, tenax version %q", flag.String(), command.String())
	}
	if code := execute([]string{"version", "--json"}, strings.NewReader(""), &asJSON, &bytes.Buffer{}); code != 0 {
		t.Fatalf("tenax version --json exited %d", code)
	}
	var v struct{ Schema, Version, Go string }
	if err := json.Unmarshal(asJSON.Bytes(), &v); err != nil {
		t.Fatalf("tenax version --json: %v\n%s", err, asJSON.String())
	}
	if v.Schema != versionSchema || v.Version != version || v.Go != runtime.Version() {
		t.Errorf("tenax version --json = %+v", v)
	}
}
