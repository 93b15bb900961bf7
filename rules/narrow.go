package rules

import (
	"slices"
	"time"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/parser"
)

// Narrowing is what a store can check with its indexes before an
// expression runs: every set field is a necessary condition of the
// expression (AND across fields, OR within a list), so the store may
// return more rows than match but never fewer. The zero Narrowing
// narrows nothing.
type Narrowing struct {
	// Types: at least one event of one of these types.
	Types []string
	// Signatures: one of these verdicts.
	Signatures []string
	// Paths: one of these request paths.
	Paths []string
	// Statuses: one of these answer statuses.
	Statuses []int
	// HookUUIDs: one of these hook uuids.
	HookUUIDs []string
	// IDs: one of these ids.
	IDs []int64
	// MinID and MaxID bound the id, inclusive (0: unbounded).
	MinID, MaxID int64
	// Since and Until bound received_at, inclusive (zero: unbounded).
	Since, Until time.Time
	// Duplicates: an event that is a duplicate (divergent or not).
	Duplicates bool
	// Divergent: an event that is a divergent duplicate.
	Divergent bool
	// Text: the store's full-text search for these words
	// (delivery.mentions, the window's search box).
	Text string
	// Problems: a contract problem or a decode error.
	Problems bool
	// None: the conjuncts contradict each other; nothing can match.
	None bool
}

// IsZero reports a Narrowing that narrows nothing.
func (n Narrowing) IsZero() bool {
	return len(n.Types) == 0 && len(n.Signatures) == 0 && len(n.Paths) == 0 && len(n.Statuses) == 0 &&
		len(n.HookUUIDs) == 0 && len(n.IDs) == 0 && n.MinID == 0 && n.MaxID == 0 && n.Since.IsZero() &&
		n.Until.IsZero() && !n.Duplicates && !n.Divergent && n.Text == "" && !n.Problems && !n.None
}

// narrowPlan is the narrowing found at compile time; bounds that depend
// on `now` are evaluated when a search starts.
type narrowPlan struct {
	fixed  Narrowing
	bounds []timeBound
}

// timeBound is `delivery.received_at OP <static expression>`.
type timeBound struct {
	op  string // operators.Less, ... with received_at on the left
	prg cel.Program
}

// Narrowing returns what the store can check first, with `now` at now.
func (e *Expr) Narrowing(now time.Time) Narrowing {
	if e.plan == nil {
		return Narrowing{}
	}
	n := e.plan.fixed
	for _, b := range e.plan.bounds {
		out, _, err := b.prg.Eval(map[string]any{"now": types.Timestamp{Time: now}})
		if err != nil {
			continue
		}
		ts, ok := out.(types.Timestamp)
		if !ok {
			continue
		}
		switch b.op {
		case operators.Greater, operators.GreaterEquals:
			if n.Since.IsZero() || ts.Time.After(n.Since) {
				n.Since = ts.Time
			}
		case operators.Less, operators.LessEquals:
			if n.Until.IsZero() || ts.Time.Before(n.Until) {
				n.Until = ts.Time
			}
		case operators.Equals:
			n.Since, n.Until = ts.Time, ts.Time
		}
	}
	return n
}

// narrowingOf walks the top-level conjuncts of a checked expression and
// keeps those the store can check: comparisons of delivery fields with
// constants, received_at against expressions of constants and now, and
// the event types and dedupe verdicts inside events.exists(...).
func narrowingOf(env *cel.Env, a *celast.AST) *narrowPlan {
	p := &narrowPlan{}
	for _, c := range conjuncts(a.Expr()) {
		p.conjunct(env, a, c)
	}
	return p
}

// conjuncts flattens a && b && c.
func conjuncts(e celast.Expr) []celast.Expr {
	if e.Kind() == celast.CallKind && e.AsCall().FunctionName() == operators.LogicalAnd {
		var out []celast.Expr
		for _, arg := range e.AsCall().Args() {
			out = append(out, conjuncts(arg)...)
		}
		return out
	}
	return []celast.Expr{e}
}

// deliveryField returns the field name of `delivery.F`.
func deliveryField(e celast.Expr) (string, bool) {
	if e.Kind() != celast.SelectKind || e.AsSelect().IsTestOnly() {
		return "", false
	}
	op := e.AsSelect().Operand()
	if op.Kind() != celast.IdentKind || op.AsIdent() != "delivery" {
		return "", false
	}
	return e.AsSelect().FieldName(), true
}

// varField returns the field name of `v.F` for the iteration variable v.
func varField(e celast.Expr, v string) (string, bool) {
	if e.Kind() != celast.SelectKind || e.AsSelect().IsTestOnly() {
		return "", false
	}
	op := e.AsSelect().Operand()
	if op.Kind() != celast.IdentKind || op.AsIdent() != v {
		return "", false
	}
	return e.AsSelect().FieldName(), true
}

// literals returns the constant values of a literal or a list of them.
func literals(e celast.Expr) ([]any, bool) {
	switch e.Kind() {
	case celast.LiteralKind:
		return []any{e.AsLiteral().Value()}, true
	case celast.ListKind:
		var out []any
		for _, el := range e.AsList().Elements() {
			if el.Kind() != celast.LiteralKind {
				return nil, false
			}
			out = append(out, el.AsLiteral().Value())
		}
		return out, true
	}
	return nil, false
}

// mirror is the operator with its operands swapped (a < b == b > a).
var mirror = map[string]string{
	operators.Less: operators.Greater, operators.LessEquals: operators.GreaterEquals,
	operators.Greater: operators.Less, operators.GreaterEquals: operators.LessEquals,
	operators.Equals: operators.Equals,
}

func (p *narrowPlan) conjunct(env *cel.Env, a *celast.AST, e celast.Expr) {
	if p.problemsConjunct(e) || e.Kind() == celast.CallKind && p.mentionsConjunct(e.AsCall()) {
		return
	}
	switch e.Kind() {
	case celast.ComprehensionKind:
		p.exists(e.AsComprehension())
		return
	case celast.CallKind:
	default:
		return
	}
	c := e.AsCall()
	args := c.Args()
	if len(args) != 2 {
		return
	}
	fn := c.FunctionName()
	if fn == operators.In {
		if name, ok := deliveryField(args[0]); ok {
			if vals, ok := literals(args[1]); ok && args[1].Kind() == celast.ListKind {
				p.values(name, vals)
			}
		}
		return
	}
	if _, ok := mirror[fn]; !ok {
		return
	}
	left, right := args[0], args[1]
	name, ok := deliveryField(left)
	if !ok {
		if name, ok = deliveryField(right); !ok {
			return
		}
		left, right, fn = right, left, mirror[fn]
	}
	if fn == operators.Equals {
		if vals, ok := literals(right); ok && right.Kind() == celast.LiteralKind {
			p.values(name, vals)
			return
		}
	}
	switch name {
	case "id":
		if vals, ok := literals(right); ok && right.Kind() == celast.LiteralKind {
			if n, ok := vals[0].(int64); ok {
				p.idBound(fn, n)
			}
		}
	case "received_at":
		if !static(right) {
			return
		}
		src, err := parser.Unparse(right, a.SourceInfo())
		if err != nil {
			return
		}
		checked, iss := env.Compile(src)
		if iss != nil && iss.Err() != nil {
			return
		}
		prg, err := env.Program(checked)
		if err != nil {
			return
		}
		p.bounds = append(p.bounds, timeBound{op: fn, prg: prg})
	}
}

// static reports an expression that reads no delivery (only constants
// and now), so it can be worked out once per search.
func static(e celast.Expr) bool {
	ok := true
	celast.PreOrderVisit(e, celast.NewExprVisitor(func(x celast.Expr) {
		switch x.Kind() {
		case celast.IdentKind:
			if x.AsIdent() != "now" {
				ok = false
			}
		case celast.ComprehensionKind:
			ok = false
		}
	}))
	return ok
}

func (p *narrowPlan) idBound(op string, n int64) {
	f := &p.fixed
	switch op {
	case operators.Greater:
		f.MinID = max(f.MinID, n+1)
	case operators.GreaterEquals:
		f.MinID = max(f.MinID, n)
	case operators.Less:
		if n <= 1 {
			f.None = true
		} else if f.MaxID == 0 || n-1 < f.MaxID {
			f.MaxID = n - 1
		}
	case operators.LessEquals:
		if f.MaxID == 0 || n < f.MaxID {
			f.MaxID = n
		}
	}
}

// values narrows a delivery field to a set of constants.
func (p *narrowPlan) values(field string, vals []any) {
	f := &p.fixed
	switch field {
	case "signature":
		f.Signatures = intersect(f.Signatures, strs(vals))
	case "path":
		f.Paths = intersect(f.Paths, strs(vals))
	case "hook_uuid":
		f.HookUUIDs = intersect(f.HookUUIDs, strs(vals))
	case "status":
		f.Statuses = intersect(f.Statuses, ints(vals))
	case "id":
		f.IDs = intersect(f.IDs, slices.DeleteFunc(int64s(vals), func(n int64) bool { return n <= 0 }))
	}
	if (f.Signatures != nil && len(f.Signatures) == 0) || (f.Paths != nil && len(f.Paths) == 0) ||
		(f.HookUUIDs != nil && len(f.HookUUIDs) == 0) || (f.Statuses != nil && len(f.Statuses) == 0) ||
		(f.IDs != nil && len(f.IDs) == 0) {
		f.None = true
	}
}

// exists narrows by `events.exists(e, ... e.type == T ... && e.dedupe == D ...)`:
// the comprehension the exists macro expands to, whose loop step is
// `@result || <predicate>`.
func (p *narrowPlan) exists(c celast.ComprehensionExpr) {
	r := c.IterRange()
	if r.Kind() != celast.IdentKind || r.AsIdent() != "events" {
		return
	}
	step := c.LoopStep()
	if step.Kind() != celast.CallKind || step.AsCall().FunctionName() != operators.LogicalOr || len(step.AsCall().Args()) != 2 {
		return
	}
	acc := step.AsCall().Args()[0]
	if acc.Kind() != celast.IdentKind || acc.AsIdent() != c.AccuVar() {
		return
	}
	v := c.IterVar()
	for _, cond := range conjuncts(step.AsCall().Args()[1]) {
		if cond.Kind() != celast.CallKind || len(cond.AsCall().Args()) != 2 {
			continue
		}
		fn, args := cond.AsCall().FunctionName(), cond.AsCall().Args()
		left, right := args[0], args[1]
		name, ok := varField(left, v)
		if !ok && fn == operators.Equals {
			name, ok = varField(right, v)
			left, right = right, left
		}
		if !ok {
			continue
		}
		vals, ok := literals(right)
		if !ok || (fn != operators.Equals && !(fn == operators.In && right.Kind() == celast.ListKind)) {
			if name == "dedupe" && fn == operators.NotEquals && ok && len(vals) == 1 && vals[0] == DedupeFirst {
				p.fixed.Duplicates = true
			}
			continue
		}
		switch name {
		case "type":
			if ts := strs(vals); len(p.fixed.Types) == 0 || len(ts) < len(p.fixed.Types) {
				p.fixed.Types = ts
			}
		case "dedupe":
			ds := strs(vals)
			switch {
			case len(ds) == 1 && ds[0] == DedupeDivergent:
				p.fixed.Divergent = true
			case len(ds) > 0 && !slices.Contains(ds, DedupeFirst):
				p.fixed.Duplicates = true
			}
		}
	}
}

// intersect narrows a set already narrowed by another conjunct; a nil
// have means "not narrowed yet". An empty, non-nil result means nothing
// can match (values sets None).
func intersect[T comparable](have, add []T) []T {
	if have == nil {
		return add
	}
	out := []T{}
	for _, v := range add {
		if slices.Contains(have, v) {
			out = append(out, v)
		}
	}
	return out
}

func strs(vals []any) []string {
	out := []string{}
	for _, v := range vals {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func ints(vals []any) []int {
	out := []int{}
	for _, v := range vals {
		if n, ok := v.(int64); ok {
			out = append(out, int(n))
		}
	}
	return out
}

func int64s(vals []any) []int64 {
	out := []int64{}
	for _, v := range vals {
		if n, ok := v.(int64); ok {
			out = append(out, n)
		}
	}
	return out
}
