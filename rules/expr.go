// Package rules is Hookscope's one expression language: CEL expressions
// over a delivery and its events, compiled once and evaluated many times,
// used to find deliveries (--where, the window's filter bar), to choose a
// forward route, and to answer deliveries (answer rules: a status, a
// delay, a closed connection, a sequence per message). It also learns the
// service's re-send schedule from the stored attempts of each message.
//
// Expressions see the variables `delivery`, `events` and `now`
// (docs/rules.md lists every field with examples). An expression is
// compiled for a View: Stored sees everything the store knows (the
// ledger's dedupe verdicts, the answer, forwarding); Arrival sees only
// what the receiver knows before it answers, and using anything else is a
// compile error that points at the column.
//
// The package never imports Fyne or the store: the store implements
// Source, and the faces call Find, Rules.Decide and the observatory.
package rules

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/parser"

	"github.com/hookscope/hookscope/inspector"
)

// View says what an expression may see.
type View int

// The views.
const (
	// Stored is a stored delivery with its analysis and forwarding:
	// finding, route selection after storing, the observatory.
	Stored View = iota
	// Arrival is what the receiver knows before it answers: the request
	// and its body decoded to events, the signature checked with the
	// receiver's secrets; no id, answer, ledger (dedupe, resend) or
	// forwarding yet. Answer rules and pass-through routes use it.
	Arrival
)

// String names the view: "stored" or "arrival".
func (v View) String() string {
	if v == Arrival {
		return "arrival"
	}
	return "stored"
}

// maxExprLen bounds an expression's length: a filter or rule is a line or
// two; anything longer is a mistake (a pasted body) that would only be
// slow to parse.
const maxExprLen = 4096

// Expr is a compiled expression that yields a bool. It is safe for
// concurrent use.
type Expr struct {
	src   string
	view  View
	prg   cel.Program
	needs Needs
	plan  *narrowPlan
}

// Needs says which parts of a delivery an expression reads, so a source
// loads only those (a body, headers, forwarding are the costly parts).
type Needs struct {
	Headers  bool // delivery.headers, delivery.header_values
	Body     bool // delivery.body, an event's payload or metadata
	Events   bool // events (types, uuids, dedupe verdicts)
	Problems bool // an event's problems, delivery.decode_error
	Forward  bool // delivery.forward
}

// Error is a compile error: where in the expression, and what is wrong.
type Error struct {
	// Expr is the expression as given.
	Expr string
	// Line and Column are 1-based; Column counts characters (runes).
	Line, Column int
	Message      string
}

// Error renders the error on one line: "column 12: undefined field 'tpye'".
func (e *Error) Error() string {
	if e.Line > 1 {
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Message)
	}
	return fmt.Sprintf("column %d: %s", e.Column, e.Message)
}

// Render shows the error as a compiler does: the expression's line, a
// caret under the column, then the message.
func (e *Error) Render() string {
	lines := strings.Split(e.Expr, "\n")
	line := ""
	if e.Line >= 1 && e.Line <= len(lines) {
		line = strings.ReplaceAll(lines[e.Line-1], "\t", " ")
	}
	pad := strings.Repeat(" ", max(0, min(e.Column-1, utf8.RuneCountInString(line))))
	return fmt.Sprintf("  %s\n  %s^\n%s", line, pad, e.Error())
}

// CompileErrors holds every compile error of one expression (the first
// is usually the one to fix).
type CompileErrors []*Error

// Error is the first error, with a count of the others.
func (ce CompileErrors) Error() string {
	if len(ce) == 1 {
		return ce[0].Error()
	}
	return fmt.Sprintf("%s (and %d more)", ce[0].Error(), len(ce)-1)
}

// Render renders every error as Error.Render does.
func (ce CompileErrors) Render() string {
	parts := make([]string, len(ce))
	for i, e := range ce {
		parts[i] = e.Render()
	}
	return strings.Join(parts, "\n")
}

// Render renders err as a compiler would when it is a compile error
// (caret under the column), and as err.Error() otherwise.
func Render(err error) string {
	var ce CompileErrors
	if errors.As(err, &ce) {
		return ce.Render()
	}
	return err.Error()
}

// Compiler compiles expressions for one view. Build it once (NewCompiler);
// it is safe for concurrent use.
type Compiler struct {
	view View
	env  *cel.Env
}

// NewCompiler returns the compiler of a view.
func NewCompiler(v View) (*Compiler, error) {
	macros := []cel.Macro{cel.GlobalMacro("has", 1, deepHas)}
	for _, m := range cel.StandardMacros {
		if m.Function() != "has" {
			macros = append(macros, m)
		}
	}
	env, err := cel.NewEnv(
		cel.ClearMacros(),
		cel.Macros(macros...),
		cel.CustomTypeProvider(newProvider()),
		cel.Variable("delivery", deliveryType),
		cel.Variable("events", cel.ListType(eventType)),
		cel.Variable("now", cel.TimestampType),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Lists(),
		ext.Sets(),
		mentionsFunction(),
		cel.ParserExpressionSizeLimit(maxExprLen),
	)
	if err != nil {
		return nil, fmt.Errorf("expression environment: %w", err)
	}
	return &Compiler{view: v, env: env}, nil
}

// Compile compiles one expression for a view with a compiler made for the
// call; a face compiling many keeps a Compiler instead.
func Compile(src string, v View) (*Expr, error) {
	c, err := NewCompiler(v)
	if err != nil {
		return nil, err
	}
	return c.Compile(src)
}

// Compile checks src and returns it compiled, or CompileErrors that
// point at the column. src must yield a bool.
func (c *Compiler) Compile(src string) (*Expr, error) {
	if strings.TrimSpace(src) == "" {
		return nil, CompileErrors{{Expr: src, Line: 1, Column: 1, Message: "the expression is empty; write a condition such as delivery.signature == \"invalid\""}}
	}
	checked, iss := c.env.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, c.errors(src, iss.Errors())
	}
	if t := checked.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, CompileErrors{{Expr: src, Line: 1, Column: 1, Message: fmt.Sprintf("the expression gives a %s; it must give true or false (compare it: == , >, in, exists(...))", t)}}
	}
	native := checked.NativeRep()
	if errs := checkView(src, native, c.view); len(errs) > 0 {
		return nil, errs
	}
	if errs := checkLiterals(src, native); len(errs) > 0 {
		return nil, errs
	}
	prg, err := c.env.Program(checked, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("prepare expression: %w", err)
	}
	e := &Expr{src: src, view: c.view, prg: prg, needs: needsOf(native)}
	if c.view == Stored {
		e.plan = narrowingOf(c.env, native)
	}
	return e, nil
}

// errors converts cel's issues, making its messages plainer.
func (c *Compiler) errors(src string, errs []*common.Error) CompileErrors {
	out := make(CompileErrors, 0, len(errs))
	for _, e := range errs {
		msg := e.Message
		if strings.HasPrefix(msg, "undeclared reference to '") {
			name := strings.TrimPrefix(msg, "undeclared reference to '")
			name, _, _ = strings.Cut(name, "'")
			msg = fmt.Sprintf("unknown name %q: the variables are delivery, events and now", name)
		}
		if strings.HasPrefix(msg, "undefined field '") {
			msg += fieldHint(msg)
		}
		out = append(out, &Error{Expr: src, Line: max(1, e.Location.Line()), Column: e.Location.Column() + 1, Message: msg})
	}
	return out
}

// Source is the expression as given.
func (e *Expr) Source() string { return e.src }

// View is the view the expression was compiled for.
func (e *Expr) View() View { return e.view }

// Needs says which parts of a delivery the expression reads.
func (e *Expr) Needs() Needs { return e.needs }

// Eval evaluates the expression on in. An expression that fails on this
// delivery (a missing key in a payload, a type mismatch) returns the
// failure: callers that filter treat it as no match and may count it.
func (e *Expr) Eval(in Input) (bool, error) {
	if in.Now.IsZero() {
		in.Now = time.Now()
	}
	return e.evalWith(newActivation(&in, e.view))
}

// Match reports whether a stored record matches, now being the time of
// the call; an expression that fails on the record does not match. It is
// what a forward route chosen by an expression calls (phase 2 wiring):
// for a record not analyzed yet, the events come from its body.
func (e *Expr) Match(r *inspector.Record) bool {
	ok, _ := e.Eval(Input{Record: r})
	return ok
}

// deepHas is has() that is false, not an error, when a level above the
// tested field is missing: has(e.payload.previous_attributes.thumbnail)
// on an event without previous_attributes. Payloads differ by event type,
// and the standard has() would make the issue's own example fail on
// every media.updated that changed its title only. It expands to
// has(a.b) && has(a.b.c) for each level of the selection.
func deepHas(eh parser.ExprHelper, _ celast.Expr, args []celast.Expr) (celast.Expr, *common.Error) {
	if args[0].Kind() != celast.SelectKind {
		return nil, eh.NewError(args[0].ID(), "has() takes a field selection, such as has(e.payload.media.thumbnail)")
	}
	var tests []celast.Expr
	for x := args[0]; x.Kind() == celast.SelectKind; x = x.AsSelect().Operand() {
		sel := x.AsSelect()
		tests = append(tests, eh.NewPresenceTest(eh.Copy(sel.Operand()), sel.FieldName()))
	}
	// Outermost level first, so each test runs only once its parent exists.
	out := tests[len(tests)-1]
	for i := len(tests) - 2; i >= 0; i-- {
		out = eh.NewCall(operators.LogicalAnd, out, tests[i])
	}
	return out, nil
}
