package sql

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestNewestFirst(t *testing.T) {
	got := newestFirst([]string{"0.9.0", "0.100.0", "0.49.6", "1.0.0", "0.49.10"})
	want := []string{"1.0.0", "0.100.0", "0.49.10", "0.49.6", "0.9.0"}
	if !slices.Equal(got, want) {
		t.Fatalf("newestFirst = %v, want %v", got, want)
	}
}

// The embedded schemas are the files in schema/, and Schema is the newest.
func TestVersions(t *testing.T) {
	names, err := filepath.Glob(filepath.Join("schema", "bd-v*.sql"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no schema files: %v", err)
	}
	vs := Versions()
	if len(vs) != len(names) || vs[0] != SchemaVersion {
		t.Fatalf("Versions() = %v, SchemaVersion %s, files %v", vs, SchemaVersion, names)
	}
	want, err := os.ReadFile(filepath.Join("schema", "bd-v"+SchemaVersion+".sql"))
	if err != nil || Schema != string(want) || !strings.Contains(Schema, "CREATE TABLE issues") {
		t.Fatalf("Schema is not schema/bd-v%s.sql (%v)", SchemaVersion, err)
	}
	vs[0] = "changed"
	if Versions()[0] != SchemaVersion {
		t.Fatal("Versions() returned its own slice")
	}
}
