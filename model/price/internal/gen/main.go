// Command gen writes model/price's prices.json from the price data of the
// npm package @pydantic/genai-prices (https://github.com/pydantic/genai-prices,
// MIT licence):
//
//	go generate ./model/price            # the latest version
//	go run ./model/price/internal/gen -version 0.1.8 -o model/price/prices.json
//
// It needs npm and node. The package ships its data inside JavaScript, not
// as JSON, so node loads the package and prints the providers' data as
// JSON through its public findProvider. gen keeps ratchet's providers, each
// entry in the source's order with its match rules unchanged, and the
// prices ratchet bills (text tokens: input, output, cache read and write,
// their tiers and dates); it leaves out the source's Google entries for
// Claude on Vertex AI, since ratchet's gemini provider is the Gemini API.
// It checks the result parses as the package price reads it, and writes
// the package's licence next to the data (prices.json.LICENSE).
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/ratchetloop/ratchet/model/price"
)

const pkg = "@pydantic/genai-prices"

// providers are ratchet's provider names to the source's.
var providers = map[string]string{"anthropic": "anthropic", "openai": "openai", "gemini": "google"}

// billed are the source's price keys ratchet bills; the others (audio,
// image, per-search prices) are for things ratchet does not send.
var billed = []string{"input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok"}

func main() {
	version := flag.String("version", "latest", "the npm package's version")
	out := flag.String("o", "prices.json", "the file to write")
	flag.Parse()
	if err := run(*version, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(version, out string) error {
	dir, err := os.MkdirTemp("", "genai-prices")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	var packed []struct {
		Version   string `json:"version"`
		Filename  string `json:"filename"`
		Integrity string `json:"integrity"`
	}
	if err := npmJSON(&packed, "pack", pkg+"@"+version, "--json", "--pack-destination", dir); err != nil {
		return err
	}
	if len(packed) != 1 {
		return fmt.Errorf("npm pack: %d packages", len(packed))
	}
	p := packed[0]
	var times map[string]string
	if err := npmJSON(&times, "view", pkg, "time", "--json"); err != nil {
		return err
	}
	published, err := time.Parse(time.RFC3339, times[p.Version])
	if err != nil {
		return fmt.Errorf("npm view time: version %s: %w", p.Version, err)
	}
	if err := untar(filepath.Join(dir, p.Filename), dir); err != nil {
		return err
	}
	var meta struct {
		License  string `json:"license"`
		Homepage string `json:"homepage"`
	}
	if err := readJSON(filepath.Join(dir, "package", "package.json"), &meta); err != nil {
		return err
	}
	dump, err := dumpProviders(filepath.Join(dir, "package", "dist", "index.js"))
	if err != nil {
		return err
	}
	f := &price.File{
		Source: &price.Source{
			Name: pkg, Version: p.Version, Published: published.UTC().Format(time.DateOnly),
			Licence: meta.License, URL: meta.Homepage, Integrity: p.Integrity,
		},
		Providers: map[string][]price.Entry{},
	}
	dropped := map[string]bool{}
	for ours, theirs := range providers {
		var src sourceProvider
		if err := jsonv2.Unmarshal(dump[theirs], &src); err != nil {
			return fmt.Errorf("provider %s: %w", theirs, err)
		}
		for _, m := range src.Models {
			if ours == "gemini" && strings.Contains(m.ID, "claude") {
				continue // Vertex AI's Claude models, which the Gemini API does not serve
			}
			e, err := convert(m, dropped)
			if err != nil {
				return fmt.Errorf("provider %s, model %s: %w", theirs, m.ID, err)
			}
			f.Providers[ours] = append(f.Providers[ours], e)
		}
	}
	data, err := jsonv2.Marshal(f, jsonv2.Deterministic(true), jsontext.WithIndent("  "))
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if _, err := price.Parse(data); err != nil {
		return fmt.Errorf("the generated file does not parse: %w", err)
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range dropped {
			if !yield(k) {
				return
			}
		}
	})
	fmt.Fprintf(os.Stderr, "gen: %s %s (%s); prices not kept: %s\n", pkg, p.Version, f.Source.Published, strings.Join(keys, ", "))
	if err := os.WriteFile(out, data, 0o644); err != nil {
		return err
	}
	// The MIT licence asks for its notice to go with the data.
	licence, err := os.ReadFile(filepath.Join(dir, "package", "LICENSE"))
	if err != nil {
		return err
	}
	return os.WriteFile(out+".LICENSE", licence, 0o644)
}

// sourceProvider is the part of the source's provider data gen reads.
type sourceProvider struct {
	Models []sourceModel `json:"models"`
}

type sourceModel struct {
	ID            string         `json:"id"`
	Match         *price.Match   `json:"match"`
	Prices        jsontext.Value `json:"prices"`
	PriceComments string         `json:"price_comments"`
}

type sourceDated struct {
	Constraint *price.Constraint         `json:"constraint"`
	Prices     map[string]jsontext.Value `json:"prices"`
}

// convert turns a source model into an entry, keeping the billed prices
// and adding the others' names to dropped.
func convert(m sourceModel, dropped map[string]bool) (price.Entry, error) {
	e := price.Entry{ID: m.ID, Match: m.Match, Comment: m.PriceComments}
	if m.Match == nil {
		return e, errors.New("no match")
	}
	var dated []sourceDated
	if m.Prices.Kind() == '[' {
		if err := jsonv2.Unmarshal(m.Prices, &dated, jsonv2.RejectUnknownMembers(true)); err != nil {
			return e, err
		}
	} else {
		dated = append(dated, sourceDated{})
		if err := jsonv2.Unmarshal(m.Prices, &dated[0].Prices); err != nil {
			return e, err
		}
	}
	for _, d := range dated {
		var mp price.ModelPrice
		for k, v := range d.Prices {
			if !slices.Contains(billed, k) {
				dropped[k] = true
				continue
			}
			r := new(price.Rate)
			if err := jsonv2.Unmarshal(v, r); err != nil {
				return e, fmt.Errorf("%s: %w", k, err)
			}
			switch k {
			case "input_mtok":
				mp.Input = r
			case "output_mtok":
				mp.Output = r
			case "cache_read_mtok":
				mp.CacheRead = r
			case "cache_write_mtok":
				mp.CacheWrite = r
			}
		}
		e.Prices.Dated = append(e.Prices.Dated, price.Dated{Constraint: d.Constraint, Prices: mp})
	}
	return e, nil
}

// dumpScript prints the source's data for the providers named in argv.
const dumpScript = `
const { findProvider } = await import(process.argv[1]);
const out = {};
for (const id of process.argv.slice(2)) {
	const p = findProvider({ providerId: id });
	if (!p) throw new Error("no provider " + id);
	out[id] = p;
}
process.stdout.write(JSON.stringify(out));
`

func dumpProviders(index string) (map[string]jsontext.Value, error) {
	args := []string{"--input-type=module", "-e", dumpScript, "file://" + index}
	for _, theirs := range providers {
		args = append(args, theirs)
	}
	cmd := exec.Command("node", args...)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	var dump map[string]jsontext.Value
	return dump, jsonv2.Unmarshal(b, &dump)
}

func npmJSON(v any, args ...string) error {
	cmd := exec.Command("npm", args...)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("npm %s: %w", args[0], err)
	}
	if err := jsonv2.Unmarshal(b, v); err != nil {
		return fmt.Errorf("npm %s: %w", args[0], err)
	}
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return jsonv2.Unmarshal(b, v)
}

// untar extracts the package's regular files into dir.
func untar(tgz, dir string) error {
	b, err := os.ReadFile(tgz)
	if err != nil {
		return err
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		path := filepath.Join(dir, filepath.Clean("/"+h.Name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
}
