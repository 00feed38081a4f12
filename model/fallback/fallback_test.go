package fallback_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/fallback"
)

// fake answers with text, or fails with err; it counts its calls.
type fake struct {
	text  string
	err   error
	calls int
	price bool
}

func (f *fake) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	f.calls++
	if f.err != nil {
		return model.Response{}, f.err
	}
	return model.Response{Content: []model.Block{model.TextBlock(f.text)}, Usage: model.Usage{InputTokens: 3}}, nil
}

func (f *fake) PriceKnown() bool { return f.price }

func apiErr(kind model.ErrorKind) error {
	return &model.APIError{Provider: "p", Kind: kind, Message: string(kind)}
}

func chain(t *testing.T, ms ...*fake) *fallback.Model {
	t.Helper()
	var members []fallback.Member
	for i, m := range ms {
		members = append(members, fallback.Member{Name: string(rune('a'+i)) + ":m", Model: m})
	}
	c, err := fallback.New(members...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFallsBackOnTemporaryErrors(t *testing.T) {
	for _, kind := range []model.ErrorKind{model.ErrRateLimited, model.ErrOverloaded, model.ErrServer, model.ErrTransport, model.ErrTimeout} {
		t.Run(string(kind), func(t *testing.T) {
			a, b := &fake{err: apiErr(kind)}, &fake{text: "from b"}
			var got []model.Fallback
			ctx := model.WithHooks(context.Background(), &model.Hooks{OnFallback: func(f model.Fallback) { got = append(got, f) }})
			resp, err := chain(t, a, b).Generate(ctx, model.Request{})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Via != "b:m" || resp.Content[0].Text != "from b" || a.calls != 1 || b.calls != 1 {
				t.Errorf("resp %+v, calls a=%d b=%d; want b to answer once after a", resp, a.calls, b.calls)
			}
			want := []model.Fallback{{From: "a:m", To: "b:m", Reason: "a:m: p: " + string(kind) + ": " + string(kind)}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("fallbacks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFirstModelAnswers(t *testing.T) {
	a, b := &fake{text: "a"}, &fake{text: "b"}
	resp, err := chain(t, a, b).Generate(context.Background(), model.Request{})
	if err != nil || resp.Via != "a:m" || b.calls != 0 {
		t.Errorf("resp %+v, err %v, b called %d times; want a to answer alone", resp, err, b.calls)
	}
}

func TestConfigErrorsDoNotFallBack(t *testing.T) {
	for _, err := range []error{apiErr(model.ErrAuth), apiErr(model.ErrBadRequest), apiErr(model.ErrNotFound), errors.New("scripted: out of turns")} {
		a, b := &fake{err: err}, &fake{text: "b"}
		_, got := chain(t, a, b).Generate(context.Background(), model.Request{})
		if got == nil || b.calls != 0 {
			t.Fatalf("%v: err %v, b called %d times; want a's error and no fallback", err, got, b.calls)
		}
		if !strings.HasPrefix(got.Error(), "a:m: ") || !errors.Is(got, err) {
			t.Errorf("error %q does not name the model that failed, or does not wrap %v", got, err)
		}
	}
}

func TestNoFallbackOnceContextIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a, b := &fake{err: apiErr(model.ErrTimeout)}, &fake{text: "b"}
	if _, err := chain(t, a, b).Generate(ctx, model.Request{}); err == nil || b.calls != 0 {
		t.Errorf("err %v, b called %d times; a spent time budget leaves the next model none", err, b.calls)
	}
}

func TestEveryMemberFailed(t *testing.T) {
	a, b := &fake{err: apiErr(model.ErrOverloaded)}, &fake{err: apiErr(model.ErrServer)}
	_, err := chain(t, a, b).Generate(context.Background(), model.Request{})
	want := "b:m: p: server: server (after a:m: p: overloaded: overloaded)"
	if err == nil || err.Error() != want {
		t.Fatalf("err %v, want %q", err, want)
	}
	var e *model.APIError
	if !errors.As(err, &e) || e.Kind != model.ErrServer {
		t.Errorf("the error wraps %v; want the last member's APIError", e)
	}
}

func TestNameAndPrice(t *testing.T) {
	c := chain(t, &fake{price: true}, &fake{price: false})
	if c.Name() != "a:m,b:m" || c.PriceKnown() {
		t.Errorf("Name %q PriceKnown %v; want the joined names and unknown (one member has no price)", c.Name(), c.PriceKnown())
	}
	if !chain(t, &fake{price: true}, &fake{price: true}).PriceKnown() {
		t.Error("a chain of priced models is priced")
	}
}

func TestNewListsEveryProblem(t *testing.T) {
	_, err := fallback.New(fallback.Member{Name: "a:m"}, fallback.Member{Model: &fake{}}, fallback.Member{Name: "c:m", Model: &fake{}}, fallback.Member{Name: "c:m", Model: &fake{}})
	want := `fallback: member 1 ("a:m") has no model; member 2 has no name; member 4: c:m is already in the chain`
	if err == nil || err.Error() != want {
		t.Errorf("err %v\nwant %s", err, want)
	}
	if _, err := fallback.New(); err == nil {
		t.Error("an empty chain was accepted")
	}
}

// TestRest: a member that failed over is skipped for Rest, each skip a
// hand-over that says why; after Rest it is asked again, and the last
// member is never skipped.
func TestRest(t *testing.T) {
	a, b := &fake{err: apiErr(model.ErrOverloaded)}, &fake{text: "from b"}
	c := chain(t, a, b)
	now := time.Unix(1000, 0)
	fallback.SetClock(c, func() time.Time { return now })
	var got []model.Fallback
	ctx := model.WithHooks(context.Background(), &model.Hooks{OnFallback: func(f model.Fallback) { got = append(got, f) }})
	for range 3 {
		if resp, err := c.Generate(ctx, model.Request{}); err != nil || resp.Via != "b:m" {
			t.Fatalf("resp %+v err %v; want b", resp, err)
		}
		now = now.Add(10 * time.Second)
	}
	if a.calls != 1 || b.calls != 3 || len(got) != 3 {
		t.Fatalf("calls a=%d b=%d, %d hand-overs; want a asked once, then skipped twice", a.calls, b.calls, len(got))
	}
	if want := "a:m: skipped for 20s more, after: a:m: p: overloaded: overloaded"; got[1].Reason != want {
		t.Errorf("a skip says %q, want %q", got[1].Reason, want)
	}
	// Rest is over: a is asked again, and answers.
	a.err = nil
	a.text = "from a"
	if resp, _ := c.Generate(ctx, model.Request{}); resp.Via != "a:m" || a.calls != 2 {
		t.Errorf("after the rest: via %q, a called %d times; want a asked again", resp.Via, a.calls)
	}
	// The last member is asked even while it rests.
	x, y := &fake{err: apiErr(model.ErrOverloaded)}, &fake{err: apiErr(model.ErrOverloaded)}
	c = chain(t, x, y)
	c.Generate(context.Background(), model.Request{})
	c.Generate(context.Background(), model.Request{})
	if x.calls != 1 || y.calls != 2 {
		t.Errorf("calls x=%d y=%d; want x skipped the second time, y asked both", x.calls, y.calls)
	}
}
