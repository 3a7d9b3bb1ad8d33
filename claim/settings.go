package claim

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"
)

// Policy is the workspace-wide failure policy: how long an issue waits
// after a failed attempt, and when it is abandoned. Every agent of a
// workspace should run with the same policy (put it in .beads/config.yaml).
type Policy struct {
	BackoffInitial    time.Duration // wait before attempt 2; 0 turns backoff off
	BackoffMultiplier float64       // growth per further failure
	BackoffMax        time.Duration // cap of the wait
	MaxFailures       int           // failed attempts before the issue is abandoned; 0 = never
	AbandonedLabel    string        // the label an abandoned issue gets
}

// DefaultPolicy is seed 004's policy: 1m, doubling, at most 1h, abandoned
// after 5 failures, labelled claim:abandoned.
var DefaultPolicy = Policy{
	BackoffInitial: time.Minute, BackoffMultiplier: 2, BackoffMax: time.Hour,
	MaxFailures: 5, AbandonedLabel: "claim:abandoned",
}

// Backoff is how long an issue with failures failed attempts (since its
// last reset) waits after the latest one before it may be claimed again:
// none for the first attempt, then initial × multiplier^(failures-1),
// capped at BackoffMax.
func (p Policy) Backoff(failures int) time.Duration {
	if failures < 1 || p.BackoffInitial <= 0 {
		return 0
	}
	d := float64(p.BackoffInitial) * math.Pow(p.BackoffMultiplier, float64(failures-1))
	if d >= float64(p.BackoffMax) {
		return p.BackoffMax
	}
	return time.Duration(d)
}

// Abandoned reports whether failures failed attempts abandon an issue.
func (p Policy) Abandoned(failures int) bool { return p.MaxFailures > 0 && failures >= p.MaxFailures }

// Settings are the values that may come from flags, the environment
// (BD_CLAIM_*) or the workspace's .beads/config.yaml (keys under claim.).
type Settings struct {
	Policy
	Lease   time.Duration // lease of a claim; 0 = none (the claim holds until released)
	MaxHeld int           // in_progress issues an agent may hold; 0 = no limit
}

// DefaultSettings are the settings before any source applies.
func DefaultSettings() Settings { return Settings{Policy: DefaultPolicy} }

// Limits of the settings and durations bd-claim accepts: beyond them a
// value is surely a mistake (a unit forgotten, a sign flipped).
const (
	MaxLease   = 30 * 24 * time.Hour
	MaxBackoff = 30 * 24 * time.Hour
	MaxWait    = 24 * time.Hour
)

// setting is one named setting: its flag name, its environment variable
// and its config.yaml key are derived from the name.
type setting struct {
	name, help string
	set        func(s *Settings, v string) error
}

// settings lists every setting, in documentation order.
var settings = []setting{
	{"lease", "lease of a claim, renewed by heartbeat; 0 = none", func(s *Settings, v string) error {
		return parseDuration(v, 0, MaxLease, time.Second, &s.Lease)
	}},
	{"max-held", "in_progress issues an agent may hold before claim-next returns none; 0 = no limit", func(s *Settings, v string) error {
		return parseInt(v, 0, 10000, &s.MaxHeld)
	}},
	{"backoff-initial", "wait after a first failed attempt; 0 = no backoff", func(s *Settings, v string) error {
		return parseDuration(v, 0, MaxBackoff, time.Second, &s.BackoffInitial)
	}},
	{"backoff-multiplier", "growth of the wait per further failure (1-100)", func(s *Settings, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) || f < 1 || f > 100 {
			return fmt.Errorf("%q is not a number from 1 to 100", v)
		}
		s.BackoffMultiplier = f
		return nil
	}},
	{"backoff-max", "longest wait after a failure", func(s *Settings, v string) error {
		return parseDuration(v, 0, MaxBackoff, time.Second, &s.BackoffMax)
	}},
	{"max-failures", "failed attempts before an issue is abandoned; 0 = never", func(s *Settings, v string) error {
		return parseInt(v, 0, 1000, &s.MaxFailures)
	}},
	{"abandoned-label", "label given to an abandoned issue", func(s *Settings, v string) error {
		v = strings.TrimSpace(v)
		if v == "" || len(v) > 100 || strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 || strings.Contains(v, ",") {
			return fmt.Errorf("%q is not a label (1-100 characters, no spaces or commas)", v)
		}
		s.AbandonedLabel = v
		return nil
	}},
}

// SettingHelp describes one setting for --help and the README.
type SettingHelp struct{ Name, Env, Key, Default, Help string }

// SettingsHelp lists every setting with its sources and default.
func SettingsHelp() []SettingHelp {
	d := DefaultSettings()
	defaults := map[string]string{
		"lease": "0", "max-held": "0", "backoff-initial": d.BackoffInitial.String(),
		"backoff-multiplier": strconv.FormatFloat(d.BackoffMultiplier, 'g', -1, 64),
		"backoff-max":        d.BackoffMax.String(), "max-failures": strconv.Itoa(d.MaxFailures), "abandoned-label": d.AbandonedLabel,
	}
	out := make([]SettingHelp, len(settings))
	for i, st := range settings {
		out[i] = SettingHelp{Name: st.name, Env: envName(st.name), Key: "claim." + st.name, Default: defaults[st.name], Help: st.help}
	}
	return out
}

func envName(name string) string {
	return "BD_CLAIM_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Set sets the named setting from text, as a flag, variable or config key
// gives it; source names where the text came from, for the error.
func (s *Settings) Set(name, value, source string) error {
	for _, st := range settings {
		if st.name == name {
			if err := st.set(s, value); err != nil {
				return Errorf(EInvalid, "%s: %v", source, err)
			}
			return nil
		}
	}
	return Errorf(EInvalid, "%s: unknown setting %q", source, name)
}

// Check validates the settings as a whole, once every source has applied.
func (s Settings) Check() error {
	if s.BackoffInitial > 0 && s.BackoffMax < s.BackoffInitial {
		return Errorf(EInvalid, "backoff-max (%s) is shorter than backoff-initial (%s)", s.BackoffMax, s.BackoffInitial)
	}
	return nil
}

// LoadSettings returns the defaults overridden by the workspace's
// .beads/config.yaml (keys under claim:, nested or written claim.name) and
// then by BD_CLAIM_* variables. Flags apply on top with Set.
func LoadSettings(ws Workspace, getenv func(string) string) (Settings, error) {
	s := DefaultSettings()
	if ws.BeadsDir != "" {
		if err := s.loadConfig(filepath.Join(ws.BeadsDir, "config.yaml")); err != nil {
			return s, err
		}
	}
	for _, st := range settings {
		if v := getenv(envName(st.name)); v != "" {
			if err := s.Set(st.name, v, envName(st.name)+"="+v); err != nil {
				return s, err
			}
		}
	}
	return s, nil
}

func (s *Settings) loadConfig(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return Errorf(EWorkspace, "cannot read %s: %v", path, err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Errorf(EInvalid, "%s is not valid YAML: %v", path, err)
	}
	values := map[string]any{}
	if nested, ok := doc["claim"].(map[string]any); ok {
		for k, v := range nested {
			values[k] = v
		}
	} else if doc["claim"] != nil {
		return Errorf(EInvalid, "%s: claim must be a mapping of settings", path)
	}
	for k, v := range doc {
		if name, ok := strings.CutPrefix(k, "claim."); ok {
			values[name] = v
		}
	}
	for name, v := range values {
		if v == nil {
			continue
		}
		if err := s.Set(name, fmt.Sprint(v), path+": claim."+name); err != nil {
			return err
		}
	}
	return nil
}

// parseDuration parses a Go duration ("90s", "5m", "1h30m"; a bare "0" is
// zero) between lo and hi, and at least min unless zero.
func parseDuration(v string, lo, hi, min time.Duration, dst *time.Duration) error {
	v = strings.TrimSpace(v)
	if v == "0" {
		*dst = 0
		return nil
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a duration such as 90s, 5m or 1h30m", v)
	case d < lo:
		return fmt.Errorf("%s is negative", v)
	case d > hi:
		return fmt.Errorf("%s is longer than the limit of %s", v, hi)
	case d != 0 && d < min:
		return fmt.Errorf("%s is shorter than %s", v, min)
	}
	*dst = d
	return nil
}

func parseInt(v string, lo, hi int, dst *int) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < lo || n > hi {
		return fmt.Errorf("%q is not a whole number from %d to %d", v, lo, hi)
	}
	*dst = n
	return nil
}

// ParseDuration checks a duration given on the command line (--wait,
// --lease of a heartbeat): a Go duration from 0 to max.
func ParseDuration(flag, v string, max time.Duration) (time.Duration, error) {
	var d time.Duration
	if err := parseDuration(v, 0, max, time.Millisecond, &d); err != nil {
		return 0, Errorf(EInvalid, "--%s: %v", flag, err)
	}
	return d, nil
}
