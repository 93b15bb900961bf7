package rules

import (
	"fmt"
	"slices"
	"strings"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
)

// errorAt makes an Error at an expression node's position.
func errorAt(src string, a *celast.AST, id int64, format string, args ...any) *Error {
	loc := a.SourceInfo().GetStartLocation(id)
	return &Error{Expr: src, Line: max(1, loc.Line()), Column: loc.Column() + 1, Message: fmt.Sprintf(format, args...)}
}

// selectField returns, for a field selection on one of the object types,
// the type's name and the field.
func selectField(a *celast.AST, e celast.Expr) (typeName, name string, ok bool) {
	if e.Kind() != celast.SelectKind {
		return "", "", false
	}
	sel := e.AsSelect()
	t := a.GetType(sel.Operand().ID())
	if t == nil {
		return "", "", false
	}
	if _, known := objects[t.TypeName()]; !known {
		return "", "", false
	}
	return t.TypeName(), sel.FieldName(), true
}

// eachExpr calls fn with every node of the expression.
func eachExpr(a *celast.AST, fn func(celast.Expr)) {
	celast.PreOrderVisit(a.Expr(), celast.NewExprVisitor(fn))
}

// checkView refuses, at compile time, the fields a view does not have,
// pointing at the field and saying why it is missing.
func checkView(src string, a *celast.AST, v View) CompileErrors {
	if v != Arrival {
		return nil
	}
	var errs CompileErrors
	eachExpr(a, func(e celast.Expr) {
		typeName, name, ok := selectField(a, e)
		if !ok {
			return
		}
		if f := objects[typeName][name]; f.storedOnly {
			what := strings.TrimPrefix(typeName, "hookscope.")
			errs = append(errs, errorAt(src, a, e.ID(), "%s.%s is not known on arrival, when the answer and the forward routes are chosen (%s); answer rules and routes can use %s",
				strings.ToLower(what), name, f.why, strings.Join(fieldNames(typeName, Arrival), ", ")))
		}
	})
	return errs
}

// The values of the string fields with a fixed set, so that a typo in a
// comparison is a compile error rather than a filter that never matches.
// The outcomes are inspector/forward's (rules does not import it: the
// forwarder will import rules for expression routes).
var enumValues = map[string][]string{
	"hookscope.Delivery.signature": {"valid", "invalid", "missing", "unverified", signaturePending},
	"hookscope.Delivery.source":    {"receiver", "relay", "import", "replay"},
	"hookscope.Delivery.answer":    {"status", "close", "pass-through"},
	"hookscope.Event.dedupe":       {DedupeFirst, DedupeDuplicate, DedupeDivergent, dedupePending},
	"hookscope.Forward.outcome":    {"delivered", "rejected", "timeout", "dropped", "refused", "unreachable", "stopped"},
}

// enumHints are what users may write for a value, with the value meant.
var enumHints = map[string]string{"unsigned": "missing", "duplicated": "duplicate", "original": "first", "diverged": "divergent"}

// checkLiterals checks the string literals compared with the fixed-set
// fields (==, !=, in).
func checkLiterals(src string, a *celast.AST) CompileErrors {
	var errs CompileErrors
	check := func(field celast.Expr, lit celast.Expr) {
		typeName, name, ok := selectField(a, field)
		if !ok || lit.Kind() != celast.LiteralKind {
			return
		}
		allowed := enumValues[typeName+"."+name]
		s, isStr := lit.AsLiteral().Value().(string)
		if allowed == nil || !isStr || slices.Contains(allowed, s) {
			return
		}
		msg := fmt.Sprintf("%q is not a value of %s; it is one of %s", s, name, strings.Join(allowed, ", "))
		if meant, ok := enumHints[s]; ok && slices.Contains(allowed, meant) {
			msg = fmt.Sprintf("%q is not a value of %s: did you mean %q? (one of %s)", s, name, meant, strings.Join(allowed, ", "))
		}
		errs = append(errs, errorAt(src, a, lit.ID(), "%s", msg))
	}
	eachExpr(a, func(e celast.Expr) {
		if e.Kind() != celast.CallKind {
			return
		}
		c := e.AsCall()
		args := c.Args()
		if len(args) != 2 {
			return
		}
		switch c.FunctionName() {
		case operators.Equals, operators.NotEquals:
			check(args[0], args[1])
			check(args[1], args[0])
		case operators.In:
			if args[1].Kind() == celast.ListKind {
				for _, el := range args[1].AsList().Elements() {
					check(args[0], el)
				}
			}
		}
	})
	return errs
}

// needsOf works out which parts of a delivery an expression reads.
func needsOf(a *celast.AST) Needs {
	var n Needs
	eachExpr(a, func(e celast.Expr) {
		if e.Kind() == celast.IdentKind && e.AsIdent() == "events" {
			n.Events = true
		}
		if e.Kind() == celast.CallKind && e.AsCall().FunctionName() == "mentions" {
			// The body, and the events' types and summaries.
			n.Body, n.Events = true, true
		}
		typeName, name, ok := selectField(a, e)
		if !ok {
			return
		}
		switch typeName + "." + name {
		case "hookscope.Delivery.headers", "hookscope.Delivery.header_values":
			n.Headers = true
		case "hookscope.Delivery.body", "hookscope.Event.payload", "hookscope.Event.metadata":
			n.Body = true
		case "hookscope.Delivery.forward":
			n.Forward = true
		case "hookscope.Event.problems", "hookscope.Event.summary", "hookscope.Delivery.problems":
			n.Problems = true
		}
	})
	return n
}
