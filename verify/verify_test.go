package verify_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/verify"
)

func TestFunc(t *testing.T) {
	errInfra := errors.New("grader unreachable")
	tests := []struct {
		name    string
		fn      func(context.Context, verify.Candidate) (verify.Verdict, error)
		want    verify.Verdict
		wantErr error
	}{
		{
			"name and provenance set on the verdict",
			func(_ context.Context, c verify.Candidate) (verify.Verdict, error) {
				return verify.Verdict{OK: c.Answer == "42", Confidence: 0.9, Detail: "ran the tests", Where: "TestAnswer", Cost: 12}, nil
			},
			verify.Verdict{Check: "unit-tests", OK: true, Confidence: 0.9, Detail: "ran the tests", Where: "TestAnswer", Provenance: verify.Execution, Cost: 12},
			nil,
		},
		{
			"the function's own name and provenance are overridden",
			func(context.Context, verify.Candidate) (verify.Verdict, error) {
				return verify.Verdict{Check: "liar", Provenance: verify.Self, OK: false, Detail: "nope"}, nil
			},
			verify.Verdict{Check: "unit-tests", OK: false, Detail: "nope", Provenance: verify.Execution},
			nil,
		},
		{
			"errors pass through, verdict still named",
			func(context.Context, verify.Candidate) (verify.Verdict, error) {
				return verify.Verdict{}, errInfra
			},
			verify.Verdict{Check: "unit-tests", Provenance: verify.Execution},
			errInfra,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen verify.Candidate
			f := verify.Func{CheckName: "unit-tests", Prov: verify.Execution, Fn: func(ctx context.Context, c verify.Candidate) (verify.Verdict, error) {
				seen = c
				return tt.fn(ctx, c)
			}}
			var v verify.Verifier = f
			if v.Name() != "unit-tests" || v.Provenance() != verify.Execution {
				t.Errorf("Name, Provenance = %q, %q", v.Name(), v.Provenance())
			}
			cand := verify.Candidate{Answer: "42", Confidence: 0.8, Attempt: 3}
			got, err := v.Check(context.Background(), cand)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("verdict mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(cand, seen); diff != "" {
				t.Errorf("candidate passed to Fn mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTiersAll(t *testing.T) {
	named := func(n string) verify.Verifier { return verify.Func{CheckName: n} }
	tests := []struct {
		name  string
		tiers verify.Tiers
		want  []string
	}{
		{"empty", verify.Tiers{}, nil},
		{"cheap only", verify.Tiers{Cheap: []verify.Verifier{named("regex"), named("contains")}}, []string{"regex", "contains"}},
		{"expensive only", verify.Tiers{Expensive: []verify.Verifier{named("equals")}}, []string{"equals"}},
		{
			"cheap first, each tier in order",
			verify.Tiers{
				Cheap:     []verify.Verifier{named("c1"), named("c2"), named("c3")},
				Expensive: []verify.Verifier{named("e1"), named("e2")},
			},
			[]string{"c1", "c2", "c3", "e1", "e2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, v := range tt.tiers.All() {
				got = append(got, v.Name())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("All() names mismatch (-want +got):\n%s", diff)
			}
		})
	}

	// All returns a new slice: writing to it leaves the tiers alone, even when
	// Cheap has spare capacity.
	cheap := make([]verify.Verifier, 1, 4)
	cheap[0] = named("c1")
	tiers := verify.Tiers{Cheap: cheap, Expensive: []verify.Verifier{named("e1")}}
	all := tiers.All()
	all[0] = named("changed")
	_ = append(tiers.All()[:1], named("clobber"))
	if got := tiers.Cheap[0].Name(); got != "c1" {
		t.Errorf("writing to All()'s result changed Cheap[0] to %q", got)
	}
	if got := cheap[:2][1]; got != nil {
		t.Errorf("appending to All()'s result wrote into Cheap's spare capacity: %v", got.Name())
	}
}
