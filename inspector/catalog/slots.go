package catalog

// The typed payload used to look every field up by name (tree.get, a linear
// search over an object's members) although the walker had just matched
// each object's members to the schema. Now the walker records, for the
// fields the typed payload reads, the node it matched them to, and the
// typed payload reads those slots: one matching per object instead of one
// search per field (docs/benchmarks.md, finding 1, third round).

// slot identifies a schema field by its JSON path from the event root. A
// path means the same field in every type that has it, so one numbering
// serves all 17 types.
type slot int8

// The slots the envelope and the typed payloads read.
const (
	sUUID slot = iota
	sType
	sGeneratedAt
	sAccountID
	sPayload

	sMedia
	sMediaID
	sMediaName
	sMediaURL
	sMediaDuration
	sThumbnail
	sThumbnailURL

	sProject
	sProjectID
	sProjectName

	sPreviousAttributes

	sTranscript
	sTranscriptHashedID
	sTranscriptLanguageCode
	sTranscriptReason
	sTranscriptISO6392
	sTranscriptLanguageName
	sTranscriptLanguageNativeName
	sTranscriptText

	sLocalization
	sLocHashedID
	sLocCreatedAt
	sLocEnabled
	sLocEnabledAt
	sLocOrderedAt
	sLocUpdatedAt
	sLocISO6392
	sLocLanguageCode
	sLocLanguageName
	sLocNativeLanguageName
	sSource
	sSourceCreatedAt
	sSourceDuration
	sSourceHashedID
	sSourceName
	sSourceUpdatedAt
	sLocTranscript
	sLocTranscriptCreatedAt
	sLocTranscriptHashedID
	sLocTranscriptLanguageName
	sLocTranscriptNativeLanguageName
	sLocTranscriptText
	sLocTranscriptUpdatedAt

	sVisitor
	sVisitorID
	sSession
	sSessionID
	sPercentWatched
	sName
	sEmail
	sURL

	sLiveEvent
	sLiveEventID
	sLiveEventName
	sLiveEventURL
	sLiveEventStartsAt
	sRegistration
	sRegistrationVisitorKey
	sRegistrationRegisteredAt
	sRegistrationFields
	sLocation
	sUTM
	sReferrerURL

	numSlots
)

// slotPaths names every slot's field by its path.
var slotPaths = [numSlots]string{
	sUUID: "uuid", sType: "type", sGeneratedAt: "generated_at", sAccountID: "metadata.account_id", sPayload: "payload",

	sMedia: "payload.media", sMediaID: "payload.media.id", sMediaName: "payload.media.name", sMediaURL: "payload.media.url",
	sMediaDuration: "payload.media.duration", sThumbnail: "payload.media.thumbnail", sThumbnailURL: "payload.media.thumbnail.url",

	sProject: "payload.project", sProjectID: "payload.project.id", sProjectName: "payload.project.name",

	sPreviousAttributes: "payload.previous_attributes",

	sTranscript: "payload.transcript", sTranscriptHashedID: "payload.transcript.hashed_id",
	sTranscriptLanguageCode: "payload.transcript.language_code", sTranscriptReason: "payload.transcript.reason",
	sTranscriptISO6392: "payload.transcript.iso639_2_language_code", sTranscriptLanguageName: "payload.transcript.language_name",
	sTranscriptLanguageNativeName: "payload.transcript.language_native_name", sTranscriptText: "payload.transcript.transcript_text",

	sLocalization: "payload.localization", sLocHashedID: "payload.localization.hashed_id",
	sLocCreatedAt: "payload.localization.created_at", sLocEnabled: "payload.localization.enabled",
	sLocEnabledAt: "payload.localization.enabled_at", sLocOrderedAt: "payload.localization.ordered_at",
	sLocUpdatedAt: "payload.localization.updated_at", sLocISO6392: "payload.localization.iso639_2_language_code",
	sLocLanguageCode: "payload.localization.language_code", sLocLanguageName: "payload.localization.language_name",
	sLocNativeLanguageName: "payload.localization.native_language_name",
	sSource:                "payload.localization.source_media", sSourceCreatedAt: "payload.localization.source_media.created_at",
	sSourceDuration: "payload.localization.source_media.duration", sSourceHashedID: "payload.localization.source_media.hashed_id",
	sSourceName: "payload.localization.source_media.name", sSourceUpdatedAt: "payload.localization.source_media.updated_at",
	sLocTranscript: "payload.localization.transcript", sLocTranscriptCreatedAt: "payload.localization.transcript.created_at",
	sLocTranscriptHashedID:           "payload.localization.transcript.hashed_id",
	sLocTranscriptLanguageName:       "payload.localization.transcript.language_name",
	sLocTranscriptNativeLanguageName: "payload.localization.transcript.native_language_name",
	sLocTranscriptText:               "payload.localization.transcript.text",
	sLocTranscriptUpdatedAt:          "payload.localization.transcript.updated_at",

	sVisitor: "payload.visitor", sVisitorID: "payload.visitor.id", sSession: "payload.viewing_session", sSessionID: "payload.viewing_session.id",
	sPercentWatched: "payload.percent_watched", sName: "payload.name", sEmail: "payload.email", sURL: "payload.url",

	sLiveEvent: "payload.live_event", sLiveEventID: "payload.live_event.id", sLiveEventName: "payload.live_event.name",
	sLiveEventURL: "payload.live_event.url", sLiveEventStartsAt: "payload.live_event.starts_at",
	sRegistration: "payload.registration", sRegistrationVisitorKey: "payload.registration.visitor_key",
	sRegistrationRegisteredAt: "payload.registration.registered_at", sRegistrationFields: "payload.registration.fields",
	sLocation: "payload.location", sUTM: "payload.utm", sReferrerURL: "payload.referrer_url",
}

// noSlot marks a schema field no typed payload reads.
const noSlot slot = -1

// slotOf returns the slot of the field at path, or noSlot.
func slotOf(path string) slot {
	for i, p := range slotPaths {
		if p == path {
			return slot(i)
		}
	}
	return noSlot
}

// slots maps each slot to the node the walker matched it to in the event
// being decoded, or -1 when the event has no such member (or its parent is
// absent or not an object).
type slots [numSlots]int32

func (s *slots) reset() {
	for i := range s {
		s[i] = -1
	}
}
