package main

import (
	"slices"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/ratchetloop/ratchet/model/price"
)

// TestConvert: a source model keeps its match, its dated sets and the
// prices ratchet bills, tiers included; the others are named as dropped.
func TestConvert(t *testing.T) {
	var src sourceProvider
	err := jsonv2.Unmarshal([]byte(`{"models": [
		{"id": "m", "match": {"or": [{"equals": "m"}, {"regex": "^m-\\d{8}$"}]}, "price_comments": "note",
		 "prices": [
			{"prices": {"input_mtok": {"base": 1, "tiers": [{"start": 200000, "price": 2}]}, "output_mtok": 4, "input_audio_mtok": 9}},
			{"constraint": {"start_date": "2026-01-01", "type": "start_date"}, "prices": {"input_mtok": 0.5, "output_mtok": 2, "cache_write_mtok": 0.625, "web_searches_kcount": 10}}
		 ]}]}`), &src)
	if err != nil {
		t.Fatal(err)
	}
	dropped := map[string]bool{}
	e, err := convert(src.Models[0], dropped)
	if err != nil {
		t.Fatal(err)
	}
	f := &price.File{Providers: map[string][]price.Entry{"openai": {e}}}
	out, err := jsonv2.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"providers":{"openai":[{"id":"m","match":{"or":[{"equals":"m"},{"regex":"^m-\\d{8}$"}]},"prices":[` +
		`{"prices":{"input_mtok":{"base":1,"tiers":[{"start":200000,"price":2}]},"output_mtok":4}},` +
		`{"constraint":{"start_date":"2026-01-01","type":"start_date"},"prices":{"input_mtok":0.5,"output_mtok":2,"cache_write_mtok":0.625}}]` +
		`,"comment":"note"}]}}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if keys := slices.Sorted(func(y func(string) bool) {
		for k := range dropped {
			y(k)
		}
	}); !slices.Equal(keys, []string{"input_audio_mtok", "web_searches_kcount"}) {
		t.Errorf("dropped %v", keys)
	}
	if _, err := price.Parse(out); err != nil {
		t.Errorf("the entry does not parse: %v", err)
	}
}

// TestConvertRefuses: what the file cannot say is an error, not dropped.
func TestConvertRefuses(t *testing.T) {
	for _, tt := range []struct{ body, want string }{
		{`{"models": [{"id": "m", "match": {"glob": "m*"}, "prices": {}}]}`, "exactly one of"},
		{`{"models": [{"id": "m", "match": {"equals": "m"}, "prices": [{"constraint": {"start_time": "01:00:00Z", "end_time": "02:00:00Z", "type": "time_of_date"}, "prices": {}}]}]}`, `unknown object member name "start_time"`},
	} {
		var src sourceProvider
		err := jsonv2.Unmarshal([]byte(tt.body), &src)
		if err == nil {
			_, err = convert(src.Models[0], map[string]bool{})
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.body, err, tt.want)
		}
	}
}
