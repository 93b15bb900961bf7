package rules

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
)

// Input is one delivery as an expression sees it.
type Input struct {
	// Record is the delivery, with its analysis when it has one. Without
	// an analysis (Arrival, or a delivery not analyzed yet) the events are
	// decoded from the body.
	Record *inspector.Record
	// Forward is the latest attempt per forward route (delivery.forward).
	Forward []RouteResult
	// Now is the value of `now`; zero means the time of the call.
	Now time.Time
	// Secrets check the signature at Arrival (the receiver's secrets).
	Secrets [][]byte
	// Verify, when set, checks the signature at Arrival instead of
	// Secrets (a forward route judges as the receiver's engine does).
	Verify func(*inspector.Delivery) inspector.SignatureResult
}

// RouteResult is one forward route's latest attempt for a delivery.
type RouteResult struct {
	Route    string `json:"route"`
	Status   int    `json:"status"`
	Outcome  string `json:"outcome"`
	Attempts int    `json:"attempts"`
	Final    bool   `json:"final"`
}

// The object types expressions see.
var (
	deliveryType = types.NewObjectType("hookscope.Delivery")
	eventType    = types.NewObjectType("hookscope.Event")
	forwardType  = types.NewObjectType("hookscope.Forward")
)

// field is one field of an object type: its CEL type, how to read it from
// the Go value, and the view it needs (Arrival fields are in both views).
type field struct {
	typ *types.Type
	get func(obj any) ref.Val
	// set reports presence for has(); nil means always present.
	set func(obj any) bool
	// storedOnly: not known before the answer (compile error at Arrival).
	storedOnly bool
	// why says what the field is when a view lacks it.
	why string
}

// objects are the object types by name, with their fields.
var objects = map[string]map[string]field{
	deliveryType.TypeName(): deliveryFields,
	eventType.TypeName():    eventFields,
	forwardType.TypeName():  forwardFields,
}

var stringList = types.NewListType(types.StringType)

var deliveryFields = map[string]field{
	"id":            {typ: types.IntType, get: dget(func(d *deliveryVal) ref.Val { return types.Int(d.rec().Delivery.ID) }), storedOnly: true, why: "the id is given when the delivery is stored"},
	"received_at":   {typ: types.TimestampType, get: dget(func(d *deliveryVal) ref.Val { return types.Timestamp{Time: d.rec().Delivery.ReceivedAt} })},
	"method":        {typ: types.StringType, get: dget(func(d *deliveryVal) ref.Val { return types.String(d.rec().Delivery.Method) })},
	"path":          {typ: types.StringType, get: dget(func(d *deliveryVal) ref.Val { return types.String(d.rec().Delivery.Path) })},
	"query":         {typ: types.StringType, get: dget(func(d *deliveryVal) ref.Val { return types.String(d.rec().Delivery.Query) })},
	"headers":       {typ: types.NewMapType(types.StringType, types.StringType), get: dget((*deliveryVal).headers)},
	"header_values": {typ: types.NewMapType(types.StringType, stringList), get: dget((*deliveryVal).headerValues)},
	"size":          {typ: types.IntType, get: dget(func(d *deliveryVal) ref.Val { return types.Int(d.rec().Delivery.BodyLength) })},
	"body":          {typ: types.StringType, get: dget(func(d *deliveryVal) ref.Val { return types.String(d.rec().Delivery.Body) })},
	"signature":     {typ: types.StringType, get: dget((*deliveryVal).signature)},
	"status":        {typ: types.IntType, get: dget(func(d *deliveryVal) ref.Val { return types.Int(d.rec().Delivery.Status) }), storedOnly: true, why: "the answer is what the rule decides"},
	"answer":        {typ: types.StringType, get: dget((*deliveryVal).answer), storedOnly: true, why: "the answer is what the rule decides"},
	"held":          {typ: types.DurationType, get: dget(func(d *deliveryVal) ref.Val { return types.Duration{Duration: d.rec().Delivery.Reply().Delay} }), storedOnly: true, why: "the answer is what the rule decides"},
	"hook_uuid":     {typ: types.StringType, get: dget((*deliveryVal).hookUUID)},
	"source":        {typ: types.StringType, get: dget((*deliveryVal).source)},
	"resend":        {typ: types.BoolType, get: dget((*deliveryVal).resend), storedOnly: true, why: "re-sends are told by the ledger, after the answer"},
	"forward":       {typ: types.NewListType(forwardType), get: dget((*deliveryVal).forward), storedOnly: true, why: "forwarding happens after the delivery is stored"},
	"decode_error":  {typ: types.StringType, get: dget((*deliveryVal).decodeError)},
	"problems":      {typ: stringList, get: dget((*deliveryVal).problems), storedOnly: true, why: "the header checks run in the analysis, after the answer"},
	"truncated":     {typ: types.BoolType, get: dget(func(d *deliveryVal) ref.Val { return types.Bool(d.rec().Delivery.Truncated) })},
}

var eventFields = map[string]field{
	"index":        {typ: types.IntType, get: eget(func(e *eventVal) ref.Val { return types.Int(e.index) })},
	"type":         {typ: types.StringType, get: eget(func(e *eventVal) ref.Val { return types.String(e.typ) })},
	"uuid":         {typ: types.StringType, get: eget(func(e *eventVal) ref.Val { return types.String(e.uuid) })},
	"generated_at": {typ: types.TimestampType, get: eget(func(e *eventVal) ref.Val { return types.Timestamp{Time: e.generated} }), set: func(o any) bool { return !o.(*eventVal).generated.IsZero() }},
	"account_id":   {typ: types.StringType, get: eget(func(e *eventVal) ref.Val { return types.String(e.account) })},
	"payload":      {typ: types.DynType, get: eget(func(e *eventVal) ref.Val { return e.member("payload") }), set: func(o any) bool { return o.(*eventVal).has("payload") }},
	"metadata":     {typ: types.DynType, get: eget(func(e *eventVal) ref.Val { return e.member("metadata") }), set: func(o any) bool { return o.(*eventVal).has("metadata") }},
	"problems":     {typ: stringList, get: eget((*eventVal).problemList)},
	"summary":      {typ: types.StringType, get: eget(func(e *eventVal) ref.Val { return types.String(e.summaryText()) })},
	"dedupe":       {typ: types.StringType, get: eget(func(e *eventVal) ref.Val { return types.String(e.dedupe) }), storedOnly: true, why: "the dedupe ledger judges events after the answer"},
}

var forwardFields = map[string]field{
	"route":    {typ: types.StringType, get: fget(func(f RouteResult) ref.Val { return types.String(f.Route) })},
	"status":   {typ: types.IntType, get: fget(func(f RouteResult) ref.Val { return types.Int(f.Status) })},
	"outcome":  {typ: types.StringType, get: fget(func(f RouteResult) ref.Val { return types.String(f.Outcome) })},
	"attempts": {typ: types.IntType, get: fget(func(f RouteResult) ref.Val { return types.Int(f.Attempts) })},
	"final":    {typ: types.BoolType, get: fget(func(f RouteResult) ref.Val { return types.Bool(f.Final) })},
}

func dget(fn func(*deliveryVal) ref.Val) func(any) ref.Val {
	return func(o any) ref.Val { return fn(o.(*deliveryVal)) }
}

func eget(fn func(*eventVal) ref.Val) func(any) ref.Val {
	return func(o any) ref.Val { return fn(o.(*eventVal)) }
}

func fget(fn func(RouteResult) ref.Val) func(any) ref.Val {
	return func(o any) ref.Val { return fn(o.(*forwardVal).r) }
}

// fieldNames lists an object type's fields for a view, sorted.
func fieldNames(typeName string, v View) []string {
	var out []string
	for name, f := range objects[typeName] {
		if v == Stored || !f.storedOnly {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// fieldHint names the fields of the object a cel "undefined field"
// message is about (the checker does not say which type).
func fieldHint(msg string) string {
	name := strings.TrimPrefix(msg, "undefined field '")
	name, _, _ = strings.Cut(name, "'")
	for _, t := range []*types.Type{deliveryType, eventType, forwardType} {
		if _, ok := objects[t.TypeName()][name]; ok {
			return ""
		}
	}
	return fmt.Sprintf(" (a delivery has %s; an event has %s)",
		strings.Join(fieldNames(deliveryType.TypeName(), Stored), ", "), strings.Join(fieldNames(eventType.TypeName(), Stored), ", "))
}

// provider declares the object types over the standard registry (which
// the extensions register their types with).
type provider struct {
	*types.Registry
}

func newProvider() *provider {
	reg, err := types.NewRegistry()
	if err != nil {
		// NewRegistry with no types cannot fail.
		panic(err)
	}
	return &provider{Registry: reg}
}

// FindStructType, FindStructFieldNames, FindStructFieldType and NewValue
// answer for the three object types, and defer to the registry otherwise.
func (p *provider) FindStructType(name string) (*types.Type, bool) {
	if _, ok := objects[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Registry.FindStructType(name)
}

func (p *provider) FindStructFieldNames(name string) ([]string, bool) {
	if _, ok := objects[name]; ok {
		return fieldNames(name, Stored), true
	}
	return p.Registry.FindStructFieldNames(name)
}

func (p *provider) FindStructFieldType(name, fieldName string) (*types.FieldType, bool) {
	fields, ok := objects[name]
	if !ok {
		return p.Registry.FindStructFieldType(name, fieldName)
	}
	f, ok := fields[fieldName]
	if !ok {
		return nil, false
	}
	isSet := func(any) bool { return true }
	if f.set != nil {
		isSet = f.set
	}
	return &types.FieldType{
		Type:    f.typ,
		IsSet:   isSet,
		GetFrom: func(obj any) (any, error) { return f.get(obj), nil },
	}, true
}

func (p *provider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if _, ok := objects[name]; ok {
		return types.NewErr("%s values cannot be built in an expression", name)
	}
	return p.Registry.NewValue(name, fields)
}

// object is the part of ref.Val the three object values share.
type object struct{}

func (object) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("cannot convert to %v", t)
}

// activation resolves the three variables, building each on first use.
type activation struct {
	d      *deliveryVal
	events ref.Val
	now    ref.Val
}

func newActivation(in *Input, v View) *activation {
	return &activation{d: &deliveryVal{in: in, view: v}, now: types.Timestamp{Time: in.Now}}
}

// ResolveName gives delivery, events (built on first use) and now.
func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "delivery":
		return a.d, true
	case "events":
		if a.events == nil {
			evs := a.d.eventVals()
			vals := make([]ref.Val, len(evs))
			for i, e := range evs {
				vals[i] = e
			}
			a.events = types.NewRefValList(types.DefaultTypeAdapter, vals)
		}
		return a.events, true
	case "now":
		return a.now, true
	}
	return nil, false
}

// Parent is nil: the three variables are all there is.
func (a *activation) Parent() interpreter.Activation { return nil }

// deliveryVal is `delivery`: its fields are worked out on first use.
type deliveryVal struct {
	object
	in   *Input
	view View

	decodeOnce sync.Once
	decoded    *inspector.Message
	decodeErr  string
	events     []*eventVal
	sig        string
	// eventsRaw is the body's events array, found once for the stored
	// events whose raw JSON the source did not split out.
	eventsRaw   []byte
	eventsFound bool
	// sc scans the JSON this evaluation reads.
	sc scanner
}

// bodyEventRaw returns the JSON of the body's i-th event.
func (d *deliveryVal) bodyEventRaw(i int) []byte {
	if !d.eventsFound {
		d.eventsFound = true
		d.eventsRaw, _ = d.sc.memberRaw(d.rec().Delivery.Body, "events")
	}
	raw, _ := d.sc.elementRaw(d.eventsRaw, i)
	return raw
}

// ConvertToType, Equal (identity), Type and Value make a delivery a
// CEL object; its fields are read through the provider.
func (d *deliveryVal) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return deliveryType
	}
	return types.NewErr("cannot convert a delivery to %s", t)
}
func (d *deliveryVal) Equal(o ref.Val) ref.Val { return types.Bool(o == ref.Val(d)) }
func (d *deliveryVal) Type() ref.Type          { return deliveryType }
func (d *deliveryVal) Value() any              { return d }

func (d *deliveryVal) rec() *inspector.Record { return d.in.Record }

// analysis is the record's analysis; nil at Arrival even when one exists,
// so the two views agree with what each is allowed to know.
func (d *deliveryVal) analysis() *inspector.Analysis {
	if d.view == Arrival {
		return nil
	}
	return d.rec().Analysis
}

func (d *deliveryVal) headers() ref.Val {
	m := make(map[string]string, len(d.rec().Delivery.Headers))
	for _, h := range d.rec().Delivery.Headers {
		k := strings.ToLower(h.Name)
		if v, ok := m[k]; ok {
			// Repeated fields join as HTTP folds them (RFC 9110 5.3);
			// header_values keeps them apart.
			m[k] = v + ", " + h.Value
		} else {
			m[k] = h.Value
		}
	}
	return types.NewStringStringMap(types.DefaultTypeAdapter, m)
}

func (d *deliveryVal) headerValues() ref.Val {
	m := make(map[string][]string, len(d.rec().Delivery.Headers))
	for _, h := range d.rec().Delivery.Headers {
		k := strings.ToLower(h.Name)
		m[k] = append(m[k], h.Value)
	}
	return types.DefaultTypeAdapter.NativeToValue(m)
}

// Signature verdicts beyond the store's four: "pending" until analysis.
const signaturePending = "pending"

func (d *deliveryVal) signature() ref.Val {
	if a := d.analysis(); a != nil {
		return types.String(a.Signature.Status)
	}
	if d.view == Stored {
		return types.String(signaturePending)
	}
	if d.sig == "" {
		del := d.rec().Delivery
		if d.in.Verify != nil {
			d.sig = string(d.in.Verify(del).Status)
		} else {
			v, ok := del.Header(inspector.SignatureHeader)
			d.sig = string(inspector.Verify(v, ok, del.Body, d.in.Secrets).Status)
		}
	}
	return types.String(d.sig)
}

// answer is who answered and how: "pass-through" (the app), "close" (a
// closed connection), else "status" (delivery.status, after
// delivery.held).
func (d *deliveryVal) answer() ref.Val {
	switch del := d.rec().Delivery; {
	case del.Answer == inspector.AnswerPassThrough:
		return types.String(inspector.AnswerPassThrough)
	case del.Reply().Close:
		return types.String(inspector.AnswerClose)
	}
	return types.String("status")
}

func (d *deliveryVal) source() ref.Val {
	return types.String(cmp.Or(d.rec().Delivery.Source, "receiver"))
}

func (d *deliveryVal) resend() ref.Val {
	if a := d.analysis(); a != nil {
		return types.Bool(a.Resend)
	}
	return types.False
}

// hookUUID is the analysis' hook uuid, or without one the body's
// hook.uuid, scanned for without decoding the events (a sequence needs
// it of every delivery, on the receiver's ack path, whatever its size).
func (d *deliveryVal) hookUUID() ref.Val {
	if a := d.analysis(); a != nil {
		return types.String(a.HookUUID)
	}
	if d.decoded != nil {
		return types.String(d.decoded.HookUUID)
	}
	del := d.rec().Delivery
	if del.Rejected || del.Truncated || del.ReadError != "" {
		return types.String("")
	}
	var uuid string
	if hook, ok := d.sc.memberRaw(del.Body, "hook"); ok {
		if raw, ok := d.sc.memberRaw(hook, "uuid"); ok && unmarshalLenient(raw, &uuid) != nil {
			uuid = ""
		}
	}
	return types.String(uuid)
}

func (d *deliveryVal) decodeError() ref.Val {
	if a := d.analysis(); a != nil {
		if a.Error != nil {
			return types.String(a.Error.Reason)
		}
		return types.String("")
	}
	d.decode()
	return types.String(d.decodeErr)
}

// problems are the delivery-level contract problems (headers).
func (d *deliveryVal) problems() ref.Val {
	var out []string
	if a := d.analysis(); a != nil {
		for _, p := range a.Problems {
			out = append(out, p.Message)
		}
	}
	return types.NewStringList(types.DefaultTypeAdapter, out)
}

func (d *deliveryVal) forward() ref.Val {
	vals := make([]ref.Val, len(d.in.Forward))
	for i, r := range d.in.Forward {
		vals[i] = &forwardVal{r: r}
	}
	return types.NewRefValList(types.DefaultTypeAdapter, vals)
}

// decode decodes the body as a message once (no analysis to read).
func (d *deliveryVal) decode() {
	d.decodeOnce.Do(func() {
		del := d.rec().Delivery
		if del.Rejected || del.Truncated || del.ReadError != "" {
			d.decodeErr = "the request was not read whole"
			return
		}
		if m, ok := decodeArrival(&d.sc, del.Body); ok {
			d.decoded = m
			return
		}
		m, err := inspector.DecodeMessage(del.Body)
		if err != nil {
			d.decodeErr = err.Error()
			return
		}
		d.decoded = m
	})
}

// eventVals builds the events, from the analysis when there is one.
func (d *deliveryVal) eventVals() []*eventVal {
	if d.events != nil {
		return d.events
	}
	if a := d.analysis(); a != nil {
		d.events = make([]*eventVal, len(a.Events))
		for i := range a.Events {
			ev := &a.Events[i]
			d.events[i] = &eventVal{d: d, index: ev.Index, typ: ev.Type, uuid: ev.UUID, generated: ev.GeneratedAt,
				account: ev.AccountID, raw: ev.Raw, problems: ev.Problems, problemsKnown: true, summary: ev.Summary,
				dedupe: dedupeOf(ev)}
			if ev.GeneratedAt.IsZero() {
				d.events[i].generated = inspector.ParseTime(ev.GeneratedRaw)
			}
		}
		return d.events
	}
	d.decode()
	d.events = []*eventVal{}
	if d.decoded != nil {
		for i, ev := range d.decoded.Events {
			d.events = append(d.events, &eventVal{d: d, index: i, typ: ev.Type, uuid: ev.UUID, generated: ev.GeneratedAt,
				account: ev.AccountID, raw: ev.Raw, dedupe: dedupePending})
		}
	}
	return d.events
}

// The dedupe verdicts.
const (
	DedupeFirst     = "first"
	DedupeDuplicate = "duplicate"
	DedupeDivergent = "divergent"
	// dedupePending: a stored delivery the ledger has not judged yet.
	dedupePending = "pending"
)

func dedupeOf(ev *inspector.EventAnalysis) string {
	switch {
	case ev.Divergent:
		return DedupeDivergent
	case ev.Duplicate:
		return DedupeDuplicate
	}
	return DedupeFirst
}

// eventVal is one element of `events`; its JSON is read (lazily) on first
// use of payload or metadata.
type eventVal struct {
	object
	d                  *deliveryVal
	index              int
	typ, uuid, account string
	generated          time.Time
	raw                json.RawMessage
	problems           []catalog.Problem
	problemsKnown      bool
	summary            string
	dedupe             string
	rawFound           bool
	// members are the top-level members looked up so far (nil: absent).
	members map[string]ref.Val
}

// ConvertToType, Equal (identity), Type and Value make an event a CEL
// object; its fields are read through the provider.
func (e *eventVal) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return eventType
	}
	return types.NewErr("cannot convert an event to %s", t)
}
func (e *eventVal) Equal(o ref.Val) ref.Val { return types.Bool(o == ref.Val(e)) }
func (e *eventVal) Type() ref.Type          { return eventType }
func (e *eventVal) Value() any              { return e }

// event is the event's JSON: from the analysis, or found in the body.
func (e *eventVal) event() []byte {
	if e.raw == nil && !e.rawFound {
		e.rawFound = true
		e.raw = e.d.bodyEventRaw(e.index)
	}
	return e.raw
}

func (e *eventVal) has(key string) bool {
	_, ok := e.lookup(key)
	return ok
}

// member is a top-level member of the event's JSON (payload, metadata),
// read lazily; null when absent, so has() and == null both work.
func (e *eventVal) member(key string) ref.Val {
	if v, ok := e.lookup(key); ok {
		return v
	}
	return types.NullValue
}

// lookup finds a member once (has() then a read would scan twice).
func (e *eventVal) lookup(key string) (ref.Val, bool) {
	if v, ok := e.members[key]; ok {
		return v, v != nil
	}
	var v ref.Val
	if raw, ok := e.d.sc.memberRaw(e.event(), key); ok {
		v = lazyJSON(&e.d.sc, raw)
	}
	if e.members == nil {
		e.members = map[string]ref.Val{}
	}
	e.members[key] = v
	return v, v != nil
}

// unmarshalLenient decodes JSON as the receiver accepts it (duplicate
// names and invalid UTF-8 are the sender's problems, shown elsewhere),
// with encoding/json/v2's decoder, the one jsontext belongs to (half
// encoding/json's time on a payload).
func unmarshalLenient(b []byte, v any) error {
	return jsonv2.Unmarshal(b, v, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
}

func (e *eventVal) checked() {
	if !e.problemsKnown {
		e.problemsKnown = true
		c := catalog.DecodeEvent(e.event())
		e.problems, e.summary = c.Problems, c.Summary
	}
}

func (e *eventVal) problemList() ref.Val {
	e.checked()
	out := make([]string, len(e.problems))
	for i, p := range e.problems {
		out[i] = p.Message
	}
	return types.NewStringList(types.DefaultTypeAdapter, out)
}

func (e *eventVal) summaryText() string {
	e.checked()
	return e.summary
}

// forwardVal is one element of delivery.forward.
type forwardVal struct {
	object
	r RouteResult
}

// ConvertToType, Equal (identity), Type and Value make a forward result
// a CEL object; its fields are read through the provider.
func (f *forwardVal) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return forwardType
	}
	return types.NewErr("cannot convert a forward result to %s", t)
}
func (f *forwardVal) Equal(o ref.Val) ref.Val { return types.Bool(o == ref.Val(f)) }
func (f *forwardVal) Type() ref.Type          { return forwardType }
func (f *forwardVal) Value() any              { return f }
