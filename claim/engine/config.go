package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// ConfigValue is a key of the workspace's configuration file
// (beadsDir/config.yaml) as bd's configuration reads it: written whole
// ("status.custom: ...") or nested ("status: {custom: ...}"), the whole
// spelling first; nil when there is no workspace directory (a database
// named directly), no file, no such key, or the file is not YAML. Only
// the workspace's own file is read: not bd's user configuration, nor
// config.local.yaml.
func ConfigValue(beadsDir, key string) any {
	if beadsDir == "" {
		return nil
	}
	data, _ := os.ReadFile(filepath.Join(beadsDir, "config.yaml"))
	var doc map[string]any
	_ = yaml.Unmarshal(data, &doc)
	return Lookup(doc, key)
}

// Lookup is key ("outer.inner") in doc, a configuration file's YAML, as
// bd's viper finds it: written whole, else nested; a key written whole is
// the value even when it is not what the reader wants (viper takes the
// longest prefix found and looks no further). nil when doc has neither.
func Lookup(doc map[string]any, key string) any {
	if v, ok := doc[key]; ok {
		return v
	}
	outer, inner, _ := strings.Cut(key, ".")
	nested, _ := doc[outer].(map[string]any)
	return nested[inner]
}

// ConfigList is a key of the workspace's configuration file as bd reads a
// list from it (config.getConfigList over viper's GetStringSlice): a YAML
// sequence, or a string split at white space, each entry then split at
// commas, trimmed, the empty ones dropped.
func ConfigList(beadsDir, key string) []string {
	var entries []string
	switch v := ConfigValue(beadsDir, key).(type) {
	case string:
		entries = strings.Fields(v)
	case []any:
		for _, e := range v {
			entries = append(entries, fmt.Sprint(e))
		}
	}
	var out []string
	for _, e := range entries {
		for _, p := range strings.Split(e, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}
