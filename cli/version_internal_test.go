package cli

import (
	"runtime/debug"
	"testing"

	"gotest.tools/v3/assert"
)

// buildVersion reads what Go stamped into the build: the module version,
// the VCS revision and whether the tree was modified.
func TestBuildVersion(t *testing.T) {
	t.Parallel()
	const rev = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
	stamped := func(version string, settings ...string) *debug.BuildInfo {
		info := &debug.BuildInfo{GoVersion: "go1.26.8", Path: "github.com/bdclaim/bd-claim",
			Main: debug.Module{Path: "github.com/bdclaim/bd-claim", Version: version}}
		info.Settings = []debug.BuildSetting{{Key: "-buildmode", Value: "exe"}, {Key: "CGO_ENABLED", Value: "1"}}
		for i := 0; i < len(settings); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return info
	}
	vcs := func(modified string) []string {
		return []string{"vcs", "git", "vcs.revision", rev, "vcs.time", "2026-11-21T07:05:00Z", "vcs.modified", modified}
	}
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"go install ...@v1.2.3", stamped("v1.2.3"), "v1.2.3"},
		{"go build in a clean checkout", stamped("(devel)", vcs("false")...), "(devel) 1a2b3c4d5e6f"},
		{"go build in a modified checkout", stamped("(devel)", vcs("true")...), "(devel) 1a2b3c4d5e6f (modified)"},
		{"go build at a pseudo-version", stamped("v0.0.0-20261121070500-1a2b3c4d5e6f+dirty", vcs("true")...),
			"v0.0.0-20261121070500-1a2b3c4d5e6f+dirty 1a2b3c4d5e6f (modified)"},
		{"a release built from its tag", stamped("v1.2.3", vcs("false")...), "v1.2.3 1a2b3c4d5e6f"},
		{"a revision shorter than 12", stamped("(devel)", "vcs.revision", "abc123"), "(devel) abc123"},
		{"no module version", stamped(""), "(devel)"},
		{"no build info", nil, "(unknown)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, buildVersion(tc.info), tc.want)
		})
	}
}
