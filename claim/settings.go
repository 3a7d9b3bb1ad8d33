package claim

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/bdclaim/bd-claim/claim/engine"
)

// Settings are the values that may come from flags, the environment
// (BD_CLAIM_*) or the workspace's .beads/config.yaml (keys under claim.).
type Settings struct {
	Policy
	Lease   time.Duration // lease of a claim; 0 = none (the claim holds until released)
	MaxHeld int           // in_progress issues an agent may hold; 0 = no limit
	// DirectoryLabels is bd's directory.labels of config.yaml (directory
	// pattern: label), which bd ready applies by the directory it runs in
	// (see DirectoryLabel).
	DirectoryLabels map[string]string
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
	copy       func(dst, src *Settings) // copies this setting's value
}

func durationSetting(name, help string, max time.Duration, field func(*Settings) *time.Duration) setting {
	return setting{name, help, func(s *Settings, v string) error { return parseDuration(v, max, time.Second, field(s)) }, copyField(field)}
}

func intSetting(name, help string, max int, field func(*Settings) *int) setting {
	return setting{name, help, func(s *Settings, v string) error { return parseInt(v, 0, max, field(s)) }, copyField(field)}
}

func copyField[T any](field func(*Settings) *T) func(dst, src *Settings) {
	return func(dst, src *Settings) { *field(dst) = *field(src) }
}

// settings lists every setting, in documentation order.
var settings = []setting{
	durationSetting("lease", "lease of a claim, renewed by heartbeat; 0 = none", MaxLease, func(s *Settings) *time.Duration { return &s.Lease }),
	intSetting("max-held", "in_progress issues an agent may hold before claim-next returns none; 0 = no limit", 10000, func(s *Settings) *int { return &s.MaxHeld }),
	durationSetting("backoff-initial", "wait after a first failed attempt; 0 = no backoff", MaxBackoff, func(s *Settings) *time.Duration { return &s.BackoffInitial }),
	{"backoff-multiplier", "growth of the wait per further failure (1-100)", func(s *Settings, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) || f < 1 || f > 100 {
			return fmt.Errorf("%q is not a number from 1 to 100", v)
		}
		s.BackoffMultiplier = f
		return nil
	}, copyField(func(s *Settings) *float64 { return &s.BackoffMultiplier })},
	durationSetting("backoff-max", "longest wait after a failure", MaxBackoff, func(s *Settings) *time.Duration { return &s.BackoffMax }),
	intSetting("max-failures", "failed attempts before an issue is abandoned; 0 = never", 1000, func(s *Settings) *int { return &s.MaxFailures }),
	{"abandoned-label", "label given to an abandoned issue", func(s *Settings, v string) error {
		v = strings.TrimSpace(v)
		if v == "" || len(v) > 100 || strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 || strings.Contains(v, ",") {
			return fmt.Errorf("%q is not a label (1-100 characters, no spaces or commas)", v)
		}
		s.AbandonedLabel = v
		return nil
	}, copyField(func(s *Settings) *string { return &s.AbandonedLabel })},
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
	_, err := s.set(name, value, source)
	return err
}

func (s *Settings) set(name, value, source string) (*setting, error) {
	for i, st := range settings {
		if st.name == name {
			if err := st.set(s, value); err != nil {
				return nil, Errorf(EInvalid, "%s: %v", source, err)
			}
			return &settings[i], nil
		}
	}
	return nil, Errorf(EInvalid, "%s: unknown setting %q", source, name)
}

// Overrides are settings given on the command line: each is parsed and
// checked once, by Set, and applied over the workspace's settings by
// LoadSettings.
type Overrides struct {
	values Settings
	set    []*setting
}

// Set parses one setting; source names where the text came from (--lease).
func (o *Overrides) Set(name, value, source string) error {
	st, err := o.values.set(name, value, source)
	if err == nil {
		o.set = append(o.set, st)
	}
	return err
}

// Given returns the values given; the settings not given are zero.
func (o *Overrides) Given() Settings { return o.values }

// Apply sets the settings given over s, as LoadSettings does last: a
// long-lived caller (bd-claim mcp) loads the settings once and applies
// each request's overrides to a copy.
func (o *Overrides) Apply(s *Settings) {
	for _, st := range o.set {
		st.copy(s, &o.values)
	}
}

// Check validates the settings as a whole, once every source has applied.
func (s Settings) Check() error {
	if s.BackoffInitial > 0 && s.BackoffMax < s.BackoffInitial {
		return Errorf(EInvalid, "backoff-max (%s) is shorter than backoff-initial (%s)", s.BackoffMax, s.BackoffInitial)
	}
	return nil
}

// LoadSettings returns the defaults overridden by the workspace's
// .beads/config.yaml (keys under claim:, nested or written claim.name),
// then by BD_CLAIM_* variables, then by the overrides (flags) when given,
// and checks the result as a whole.
func LoadSettings(ws Workspace, getenv func(string) string, flags ...*Overrides) (Settings, error) {
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
	for _, o := range flags {
		o.Apply(&s)
	}
	return s, s.Check()
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
	// bd reads directory.labels as a map of strings, nested or written
	// directory.labels (engine.Lookup); anything else is no labels to bd,
	// and so here.
	labels, _ := engine.Lookup(doc, "directory.labels").(map[string]any)
	if len(labels) > 0 {
		s.DirectoryLabels = make(map[string]string, len(labels))
	}
	for pattern, label := range labels {
		s.DirectoryLabels[pattern] = fmt.Sprint(label)
	}
	return nil
}

// DirectoryLabel is the label that bd ready, run in dir without a label
// flag, scopes its list to (config directory.labels, bd's
// GetDirectoryLabels): that of a pattern dir ends with, or that names one
// of dir's directories; "" when none does. bd takes whichever matching
// pattern its map yields first; this takes the first in sorted order.
func (s Settings) DirectoryLabel(dir string) string {
	for _, pattern := range slices.Sorted(maps.Keys(s.DirectoryLabels)) {
		// bd also checks for "/"+pattern+"/", which the last check implies.
		if strings.HasSuffix(dir, pattern) || strings.HasSuffix(dir, filepath.Clean(pattern)) || strings.Contains(dir, "/"+pattern) {
			return s.DirectoryLabels[pattern]
		}
	}
	return ""
}

// parseDuration parses a Go duration ("90s", "5m", "1h30m"; a bare "0" is
// zero) and checks it with checkDuration.
func parseDuration(v string, max, min time.Duration, dst *time.Duration) error {
	v = strings.TrimSpace(v)
	d := time.Duration(0)
	if v != "0" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return fmt.Errorf("%q is not a duration such as 90s, 5m or 1h30m", v)
		}
	}
	if err := checkDuration(d, v, max, min); err != nil {
		return err
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
	if err := parseDuration(v, max, time.Millisecond, &d); err != nil {
		return 0, Errorf(EInvalid, "--%s: %v", flag, err)
	}
	return d, nil
}
