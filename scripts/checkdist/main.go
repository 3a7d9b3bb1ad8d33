// Command checkdist checks what make dist (scripts/dist.sh, goreleaser) left
// in dist/: every target of every build has its binary and its archive, each
// binary is of its OS's format and its architecture, built as its build
// says (cgo and tags, from the Go build info it carries) and stamped with
// the release's version, each archive holds the binary, README.md and the
// LICENSE files there are, and checksums.txt matches the archives. Binaries
// this machine can run print their version. It prints the artifacts with
// their sizes.
//
//	go run ./scripts/checkdist [-builds default,embedded] dist
package main

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// target is one OS/arch of one build.
type target struct{ build, goos, goarch string }

func (t target) String() string { return t.goos + "/" + t.goarch + " " + t.build }

// targets are what .goreleaser.yaml builds: the default build for every
// OS/arch bd v1.3 ships but android, the embedded one where bd ships cgo
// but macOS (scripts/dist-macos.sh builds that one on a Mac).
func targets(builds []string) []target {
	var ts []target
	for _, b := range builds {
		for _, p := range map[string][]string{
			"default":  {"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64", "freebsd/amd64"},
			"embedded": {"linux/amd64", "linux/arm64", "windows/amd64"},
		}[b] {
			goos, goarch, _ := strings.Cut(p, "/")
			ts = append(ts, target{b, goos, goarch})
		}
	}
	return ts
}

// artifact is an entry of goreleaser's dist/artifacts.json.
type artifact struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Goos   string `json:"goos"`
	Goarch string `json:"goarch"`
	Type   string `json:"type"`
	Extra  struct {
		ID string `json:"ID"`
	} `json:"extra"`
}

func main() {
	buildsFlag := flag.String("builds", "default,embedded", "the builds dist holds")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: checkdist [-builds default,embedded] DIST")
		os.Exit(2)
	}
	if err := check(flag.Arg(0), strings.Split(*buildsFlag, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "checkdist:", err)
		os.Exit(1)
	}
}

func check(dist string, builds []string) error {
	var meta struct {
		Version string `json:"version"`
		Commit  string `json:"commit"`
	}
	if err := readJSON(filepath.Join(dist, "metadata.json"), &meta); err != nil {
		return err
	}
	if len(meta.Commit) != 40 {
		return fmt.Errorf("goreleaser read no commit from git (%q in metadata.json)", meta.Commit)
	}
	var arts []artifact
	if err := readJSON(filepath.Join(dist, "artifacts.json"), &arts); err != nil {
		return err
	}
	sums, err := checksums(filepath.Join(dist, "checksums.txt"))
	if err != nil {
		return err
	}
	licenses, _ := filepath.Glob("LICENSE*")
	var errs []error
	fmt.Printf("%-62s %12s\n", "artifact", "bytes")
	for _, t := range targets(builds) {
		bin, archive, err := find(arts, t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := checkBinary(bin.Path, t, meta.Version, meta.Commit); err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", t, bin.Path, err))
		}
		if err := checkArchive(archive.Path, bin.Path, licenses, sums[archive.Name]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", t, archive.Path, err))
		}
		for _, p := range []string{bin.Path, archive.Path} {
			if st, err := os.Stat(p); err == nil {
				fmt.Printf("%-62s %12d\n", p, st.Size())
			}
		}
	}
	if len(sums) != len(targets(builds)) {
		errs = append(errs, fmt.Errorf("checksums.txt lists %d archives, want %d", len(sums), len(targets(builds))))
	}
	return errors.Join(errs...)
}

// find returns the binary and the archive of t.
func find(arts []artifact, t target) (bin, archive artifact, err error) {
	var bins, archives []artifact
	for _, a := range arts {
		if a.Goos != t.goos || a.Goarch != t.goarch {
			continue
		}
		switch {
		case a.Type == "Binary" && buildOf(a.Extra.ID) == t.build:
			bins = append(bins, a)
		case a.Type == "Archive" && a.Extra.ID == t.build:
			archives = append(archives, a)
		}
	}
	if len(bins) != 1 || len(archives) != 1 {
		return bin, archive, fmt.Errorf("%s: %d binaries and %d archives in artifacts.json, want one each", t, len(bins), len(archives))
	}
	ext := ".tar.gz"
	if t.goos == "windows" {
		ext = ".zip"
	}
	if !strings.HasSuffix(archives[0].Name, "_"+t.goos+"_"+t.goarch+"_"+t.build+ext) {
		return bin, archive, fmt.Errorf("%s: archive %s is not named _%s_%s_%s%s", t, archives[0].Name, t.goos, t.goarch, t.build, ext)
	}
	return bins[0], archives[0], nil
}

// buildOf names the build of a goreleaser build id (embedded-linux...).
func buildOf(id string) string {
	b, _, _ := strings.Cut(id, "-")
	return b
}

// checkBinary checks the format and architecture of the binary at path, and
// its build from the Go build info it carries: cgo and the embedded tags
// for the embedded build only, the release's stamp in its ldflags. On a
// machine that runs it, bd-claim version must print the stamp and the
// build.
func checkBinary(path string, t target, version, commit string) error {
	if err := checkFormat(path, t); err != nil {
		return err
	}
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return err
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	embedded := t.build == "embedded"
	if got, want := settings["CGO_ENABLED"] == "1", embedded; got != want {
		return fmt.Errorf("CGO_ENABLED=%q in its build info, want cgo %v", settings["CGO_ENABLED"], want)
	}
	if got := slices.Contains(strings.Split(settings["-tags"], ","), "embedded"); got != embedded {
		return fmt.Errorf("tags %q in its build info", settings["-tags"])
	}
	// -trimpath keeps -ldflags out of the build info: the stamped strings
	// are looked for in the binary itself.
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for _, s := range []string{"v" + version, commit} {
		if !bytes.Contains(data, []byte(s)) {
			return fmt.Errorf("%q is not stamped into it", s)
		}
	}
	if t.goos != runtime.GOOS || t.goarch != runtime.GOARCH {
		return nil
	}
	out, err := exec.Command(path, "version").Output()
	if err != nil {
		return fmt.Errorf("bd-claim version: %w", err)
	}
	name := "(default build: SQLite and Dolt server/proxied; no embedded Dolt)"
	if embedded {
		name = "(embedded build)"
	}
	if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, "bd-claim v"+version+" "+commit[:12]+" ") || !strings.HasSuffix(got, " "+name) {
		return fmt.Errorf("bd-claim version printed %q", got)
	}
	fmt.Printf("%s: %s", path, out)
	return nil
}

// checkFormat checks that the file at path is an executable of t's OS
// (ELF for Linux and FreeBSD, PE for Windows, Mach-O for macOS) and
// architecture; a macOS arm64 binary must be signed (macOS runs no
// unsigned arm64 code), its libraries the system's only.
func checkFormat(path string, t target) error {
	switch t.goos {
	case "linux", "freebsd":
		f, err := elf.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[t.goarch]
		osabi := map[string]elf.OSABI{"linux": elf.ELFOSABI_NONE, "freebsd": elf.ELFOSABI_FREEBSD}[t.goos]
		if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN || f.Machine != machine || f.OSABI != osabi {
			return fmt.Errorf("ELF %v %v %v, want an executable for %v %v", f.Type, f.Machine, f.OSABI, machine, osabi)
		}
	case "windows":
		f, err := pe.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		machine := map[string]uint16{"amd64": pe.IMAGE_FILE_MACHINE_AMD64, "arm64": pe.IMAGE_FILE_MACHINE_ARM64}[t.goarch]
		if f.Machine != machine || f.Characteristics&pe.IMAGE_FILE_EXECUTABLE_IMAGE == 0 {
			return fmt.Errorf("PE machine %#x characteristics %#x, want an executable for %#x", f.Machine, f.Characteristics, machine)
		}
	case "darwin":
		f, err := macho.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		cpu := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[t.goarch]
		if f.Type != macho.TypeExec || f.Cpu != cpu {
			return fmt.Errorf("Mach-O %v %v, want an executable for %v", f.Type, f.Cpu, cpu)
		}
		signed := false
		for _, l := range f.Loads {
			signed = signed || f.ByteOrder.Uint32(l.Raw()) == 0x1d // LC_CODE_SIGNATURE
		}
		if t.goarch == "arm64" && !signed {
			return errors.New("an arm64 Mach-O without a code signature")
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			return err
		}
		for _, l := range libs {
			if !strings.HasPrefix(l, "/usr/lib/") && !strings.HasPrefix(l, "/System/Library/Frameworks/") {
				return fmt.Errorf("links %s, not a system library", l)
			}
		}
	}
	return nil
}

// checkArchive checks that the archive at path holds the binary (the same
// bytes as bin), README.md and each license, and that its checksum is sum.
func checkArchive(path, bin string, licenses []string, sum string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != sum {
		return fmt.Errorf("sha256 %x, checksums.txt says %q", got, sum)
	}
	files := map[string][]byte{}
	if strings.HasSuffix(path, ".zip") {
		z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return err
		}
		for _, f := range z.File {
			r, err := f.Open()
			if err != nil {
				return err
			}
			files[f.Name], err = io.ReadAll(r)
			r.Close()
			if err != nil {
				return err
			}
		}
	} else {
		gz, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return err
		}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if files[h.Name], err = io.ReadAll(tr); err != nil {
				return err
			}
		}
	}
	want, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	if got, ok := files[filepath.Base(bin)]; !ok || !bytes.Equal(got, want) {
		return fmt.Errorf("%s is not the built binary (%d files: %v)", filepath.Base(bin), len(files), keys(files))
	}
	for _, name := range append([]string{"README.md"}, licenses...) {
		if _, ok := files[name]; !ok {
			return fmt.Errorf("no %s in it (%v)", name, keys(files))
		}
	}
	return nil
}

// checksums reads checksums.txt: archive name to hex sha256.
func checksums(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sums := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		sum, name, ok := strings.Cut(s.Text(), "  ")
		if !ok {
			return nil, fmt.Errorf("%s: a line without two spaces: %q", path, s.Text())
		}
		sums[name] = sum
	}
	return sums, s.Err()
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
