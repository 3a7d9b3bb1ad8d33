package claim_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// writeConfig writes .beads/config.yaml in a new workspace directory.
func writeConfig(t *testing.T, yaml string) claim.Workspace {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".beads")
	assert.NilError(t, os.MkdirAll(dir, 0o755))
	if yaml != "" {
		assert.NilError(t, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(yaml), 0o644))
	}
	return claim.Workspace{BeadsDir: dir, DBPath: filepath.Join(dir, "beads.db")}
}

// Settings: defaults, then .beads/config.yaml (nested under claim: or
// flat claim.name keys), then BD_CLAIM_* variables, then Set (flags).
func TestLoadSettings(t *testing.T) {
	t.Parallel()
	s, err := claim.LoadSettings(claim.Workspace{}, claimtest.Env())
	assert.NilError(t, err)
	assert.DeepEqual(t, s, claim.DefaultSettings())
	s, err = claim.LoadSettings(writeConfig(t, ""), claimtest.Env())
	assert.NilError(t, err)
	assert.DeepEqual(t, s, claim.DefaultSettings()) // no config.yaml is fine

	ws := writeConfig(t, `# bd's own keys stay bd's
issue-prefix: fx
claim:
  lease: 10m
  max-held: 3
  backoff-initial: 30s
  backoff-multiplier: 1.5
  max-failures: 7
  abandoned-label: parked
claim.backoff-max: 2h
`)
	s, err = claim.LoadSettings(ws, claimtest.Env())
	assert.NilError(t, err)
	assert.DeepEqual(t, s, claim.Settings{
		Policy:  claim.Policy{BackoffInitial: 30 * time.Second, BackoffMultiplier: 1.5, BackoffMax: 2 * time.Hour, MaxFailures: 7, AbandonedLabel: "parked"},
		Lease:   10 * time.Minute,
		MaxHeld: 3,
	})
	s, err = claim.LoadSettings(ws, claimtest.Env("BD_CLAIM_LEASE", "0", "BD_CLAIM_MAX_HELD", "4", "BD_CLAIM_ABANDONED_LABEL", "dead"))
	assert.NilError(t, err)
	assert.Equal(t, s.Lease, time.Duration(0), "the environment beats the file")
	assert.Equal(t, s.MaxHeld, 4)
	assert.Equal(t, s.AbandonedLabel, "dead")
	assert.NilError(t, s.Set("max-held", "5", "--max-held"))
	assert.Equal(t, s.MaxHeld, 5)
	assert.NilError(t, s.Check())

	nulls := writeConfig(t, "claim:\n  lease:\n")
	s, err = claim.LoadSettings(nulls, claimtest.Env())
	assert.NilError(t, err)
	assert.Equal(t, s.Lease, time.Duration(0), "an empty key keeps the default")
}

// directory.labels (bd's, nested or written directory.labels) names the
// label of the directories that end with a pattern or lie under one, the
// first pattern in sorted order when several match; a value that is not a
// mapping is no labels, as to bd.
func TestDirectoryLabel(t *testing.T) {
	t.Parallel()
	for yaml, want := range map[string]map[string]string{
		"directory:\n  labels:\n    packages/maverick: maverick\n    packages: all\n": {
			"/r/packages/maverick":       "all",
			"/r/packages/maverick/src/x": "all",
			"/r/packages":                "all",
			"/r/other":                   "",
		},
		"directory.labels:\n  svc/api/: api\n  web: 7\n": {
			"/r/svc/api":     "api",
			"/r/svc/api/cmd": "api",
			"/r/web":         "7",
			"/r/webapp":      "7", // bd's match: "/web" is in "/r/webapp"
			"/r/svc":         "",
		},
		"directory: 3\n":              {"/r/x": ""},
		"directory:\n  labels: [a]\n": {"/r/a": ""},
		// Written whole, the key is the value, as viper finds it, even
		// beside a nested mapping.
		"directory.labels: web\ndirectory:\n  labels:\n    web: w\n": {"/r/web": ""},
	} {
		s, err := claim.LoadSettings(writeConfig(t, yaml), func(string) string { return "" })
		assert.NilError(t, err, yaml)
		for dir, label := range want {
			assert.Equal(t, s.DirectoryLabel(dir), label, "%s in %q", dir, yaml)
		}
	}
}

func TestSettingsErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, env, val, msg string }{
		{yaml: "claim: [1, 2]", msg: "claim must be a mapping of settings"},
		{yaml: "claim:\n  lease: [", msg: "is not valid YAML"},
		{yaml: "claim:\n  leese: 5m", msg: `config.yaml: claim.leese: unknown setting "leese"`},
		{yaml: "claim.lease: forever", msg: `config.yaml: claim.lease: "forever" is not a duration such as 90s, 5m or 1h30m`},
		{env: "BD_CLAIM_LEASE", val: "-5m", msg: "BD_CLAIM_LEASE=-5m: -5m is negative"},
		{env: "BD_CLAIM_LEASE", val: "2000h", msg: "is longer than the limit of 720h0m0s"},
		{env: "BD_CLAIM_LEASE", val: "100ms", msg: "100ms is shorter than 1s"},
		{env: "BD_CLAIM_LEASE", val: "5", msg: `"5" is not a duration`},
		{env: "BD_CLAIM_MAX_HELD", val: "-1", msg: `"-1" is not a whole number from 0 to 10000`},
		{env: "BD_CLAIM_MAX_FAILURES", val: "lots", msg: `"lots" is not a whole number from 0 to 1000`},
		{env: "BD_CLAIM_BACKOFF_MULTIPLIER", val: "0.5", msg: `"0.5" is not a number from 1 to 100`},
		{env: "BD_CLAIM_BACKOFF_MULTIPLIER", val: "NaN", msg: `"NaN" is not a number from 1 to 100`},
		{env: "BD_CLAIM_BACKOFF_INITIAL", val: "1y", msg: "not a duration"},
		{env: "BD_CLAIM_BACKOFF_MAX", val: "-1h", msg: "is negative"},
		{env: "BD_CLAIM_ABANDONED_LABEL", val: "two words", msg: `"two words" is not a label`},
		{env: "BD_CLAIM_ABANDONED_LABEL", val: "a,b", msg: "is not a label"},
		{env: "BD_CLAIM_ABANDONED_LABEL", val: " ", msg: "is not a label"},
	} {
		_, err := claim.LoadSettings(writeConfig(t, tc.yaml), claimtest.Env(tc.env, tc.val))
		assert.Equal(t, claim.ErrorCode(err), claim.EInvalid, "%+v: %v", tc, err)
		assert.ErrorContains(t, err, tc.msg)
	}
	ws := writeConfig(t, "")
	assert.NilError(t, os.Mkdir(filepath.Join(ws.BeadsDir, "config.yaml"), 0o755))
	_, err := claim.LoadSettings(ws, claimtest.Env())
	assert.Equal(t, claim.ErrorCode(err), claim.EWorkspace, "an unreadable config.yaml: %v", err)

	s := claim.DefaultSettings()
	assert.ErrorContains(t, s.Set("nope", "1", "--nope"), `--nope: unknown setting "nope"`)
	assert.NilError(t, s.Set("backoff-max", "30s", "--backoff-max"))
	assert.ErrorContains(t, s.Check(), "backoff-max (30s) is shorter than backoff-initial (1m0s)")
	assert.NilError(t, s.Set("backoff-initial", "0", "--backoff-initial"))
	assert.NilError(t, s.Check(), "no backoff, no conflict")

	d, err := claim.ParseDuration("wait", "1m30s", claim.MaxWait)
	assert.NilError(t, err)
	assert.Equal(t, d, 90*time.Second)
	_, err = claim.ParseDuration("wait", "25h", claim.MaxWait)
	assert.ErrorContains(t, err, "--wait: 25h is longer than the limit of 24h0m0s")
}

// Every setting is documented with its variable, config key and default.
func TestSettingsHelp(t *testing.T) {
	t.Parallel()
	help := claim.SettingsHelp()
	assert.Equal(t, len(help), 7)
	for _, h := range help {
		assert.Assert(t, h.Help != "" && h.Default != "", "%+v", h)
		s := claim.DefaultSettings()
		assert.NilError(t, s.Set(h.Name, h.Default, "default"), "the documented default parses: %+v", h)
		assert.DeepEqual(t, s, claim.DefaultSettings())
	}
	assert.DeepEqual(t, help[0], claim.SettingHelp{Name: "lease", Env: "BD_CLAIM_LEASE", Key: "claim.lease", Default: "0",
		Help: "lease of a claim, renewed by heartbeat; 0 = none"})
}
