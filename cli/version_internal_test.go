package cli

import (
	"runtime/debug"
	"testing"

	"gotest.tools/v3/assert"
)

// buildVersion reads a release build's stamp (goreleaser's ldflags), else
// what Go stamped into the build: the module version, the VCS revision and
// whether the tree was modified.
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
	release := stamp{"v1.2.3", rev, "2026-11-28T16:40:00Z"}
	for _, tc := range []struct {
		name  string
		stamp stamp
		info  *debug.BuildInfo
		want  string
	}{
		{"a release build: its stamp wins over the build info", release, stamped("v9.9.9", vcs("true")...), "v1.2.3 1a2b3c4d5e6f 2026-11-28T16:40:00Z"},
		{"a release build without build info", release, nil, "v1.2.3 1a2b3c4d5e6f 2026-11-28T16:40:00Z"},
		{"a stamp of the version only", stamp{version: "v1.2.3-snapshot"}, stamped("(devel)", vcs("false")...), "v1.2.3-snapshot"},
		{"a short commit in the stamp", stamp{"v1.2.3", "abc", ""}, nil, "v1.2.3 abc"},
		{"go install ...@v1.2.3", stamp{}, stamped("v1.2.3"), "v1.2.3"},
		{"go build in a clean checkout", stamp{}, stamped("(devel)", vcs("false")...), "(devel) 1a2b3c4d5e6f"},
		{"go build in a modified checkout", stamp{}, stamped("(devel)", vcs("true")...), "(devel) 1a2b3c4d5e6f (modified)"},
		{"go build at a pseudo-version", stamp{}, stamped("v0.0.0-20261121070500-1a2b3c4d5e6f+dirty", vcs("true")...),
			"v0.0.0-20261121070500-1a2b3c4d5e6f+dirty 1a2b3c4d5e6f (modified)"},
		{"a release built from its tag", stamp{}, stamped("v1.2.3", vcs("false")...), "v1.2.3 1a2b3c4d5e6f"},
		{"a revision shorter than 12", stamp{}, stamped("(devel)", "vcs.revision", "abc123"), "(devel) abc123"},
		{"no module version", stamp{}, stamped(""), "(devel)"},
		{"no build info", stamp{}, nil, "(unknown)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, buildVersion(tc.stamp, tc.info), tc.want)
		})
	}
}

// A build names itself: the embedded one handles every workspace; the
// default one says what it lacks.
func TestBuildName(t *testing.T) {
	t.Parallel()
	assert.Equal(t, buildName(true), "embedded build")
	assert.Equal(t, buildName(false), "default build: SQLite and Dolt server/proxied; no embedded Dolt")
}
