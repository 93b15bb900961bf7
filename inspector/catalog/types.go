package catalog

import "encoding/json"

// The payload types below follow the spec (section 2.4 and section 6) field
// for field. Their JSON tags are the wire names, so marshalling one yields
// the payload as the service sends it; the simulator relies on that.
// Numbers the service has been seen to send as null are pointers, and
// fields the spec calls optional are pointers with omitempty, so "absent",
// "null" and "zero" stay distinguishable.

// The 17 event type names, in the order of the spec's table.
const (
	TypeMediaCreated             = "media.created"
	TypeMediaProcessing          = "media.processing"
	TypeMediaReady               = "media.ready"
	TypeMediaFailed              = "media.failed"
	TypeMediaUpdated             = "media.updated"
	TypeMediaTranscriptUpdated   = "media.transcript_updated"
	TypeMediaTranscriptFailed    = "media.transcript_failed"
	TypeMediaDeleted             = "media.deleted"
	TypeMediaTranslationCreated  = "media.translation_created"
	TypeMediaLocalizationCreated = "media.localization_created"
	TypeMediaLocalizationFailed  = "media.localization_failed"
	TypeViewingPlay              = "viewing_session.play"
	TypeViewingPercentWatched    = "viewing_session.percent_watched"
	TypeViewingTurnstile         = "viewing_session.turnstile.converted"
	TypeViewingCallToAction      = "viewing_session.call_to_action.converted"
	TypeViewingAnnotation        = "viewing_session.annotation.converted"
	TypeLiveEventRegistration    = "live_event.registration"
)

// Media is the media object of every media.* and viewing_session.* payload.
type Media struct {
	// ID is the media's hashed ID.
	ID   string `json:"id"`
	Name string `json:"name"`
	// URL is the media page.
	URL string `json:"url"`
	// Duration is the length in (presumably) seconds; nil when the service
	// sent null, which real deliveries do.
	Duration  *float64   `json:"duration"`
	Thumbnail *Thumbnail `json:"thumbnail"`
}

// Thumbnail holds the media's thumbnail image URL.
type Thumbnail struct {
	URL string `json:"url"`
}

// DeletedMedia is the media object of media.deleted, which carries only id.
type DeletedMedia struct {
	ID string `json:"id"`
}

// Project is the folder holding a media.
type Project struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Transcript is the transcript of media.transcript_updated.
type Transcript struct {
	HashedID string `json:"hashed_id"`
	// LanguageCode is for example a three-letter code ("eng"); it selects
	// the transcript through the captions show endpoint.
	LanguageCode string `json:"language_code"`
}

// FailedTranscript is the transcript of media.transcript_failed.
type FailedTranscript struct {
	HashedID     string `json:"hashed_id"`
	LanguageCode string `json:"language_code"`
	// Reason is present only when the service knows it.
	Reason *string `json:"reason,omitempty"`
}

// Translation is the transcript object of media.translation_created.
type Translation struct {
	HashedID            string `json:"hashed_id"`
	ISO6392LanguageCode string `json:"iso639_2_language_code"`
	LanguageCode        string `json:"language_code"`
	LanguageName        string `json:"language_name"`
	LanguageNativeName  string `json:"language_native_name"`
	TranscriptText      string `json:"transcript_text"`
}

// Localization is the localization object of media.localization_created.
// Its timestamps are ISO 8601 with a +00:00 offset.
type Localization struct {
	HashedID            string                  `json:"hashed_id"`
	CreatedAt           string                  `json:"created_at"`
	Enabled             bool                    `json:"enabled"`
	EnabledAt           string                  `json:"enabled_at"`
	OrderedAt           string                  `json:"ordered_at"`
	UpdatedAt           string                  `json:"updated_at"`
	ISO6392LanguageCode string                  `json:"iso639_2_language_code"`
	LanguageCode        string                  `json:"language_code"`
	LanguageName        string                  `json:"language_name"`
	NativeLanguageName  string                  `json:"native_language_name"`
	SourceMedia         *SourceMedia            `json:"source_media"`
	Transcript          *LocalizationTranscript `json:"transcript"`
}

// SourceMedia is the media a localization was made from.
type SourceMedia struct {
	CreatedAt string   `json:"created_at"`
	Duration  *float64 `json:"duration"`
	HashedID  string   `json:"hashed_id"`
	Name      string   `json:"name"`
	UpdatedAt string   `json:"updated_at"`
}

// LocalizationTranscript is the transcript inside a localization.
type LocalizationTranscript struct {
	CreatedAt          string `json:"created_at"`
	HashedID           string `json:"hashed_id"`
	LanguageName       string `json:"language_name"`
	NativeLanguageName string `json:"native_language_name"`
	Text               string `json:"text"`
	UpdatedAt          string `json:"updated_at"`
}

// FailedLocalization is the localization object of media.localization_failed.
type FailedLocalization struct {
	HashedID     string `json:"hashed_id"`
	LanguageCode string `json:"language_code"`
	LanguageName string `json:"language_name"`
}

// Visitor is the person watching. Email and Name appear only in
// viewing_session.percent_watched, and only when a form was submitted in
// the same session.
type Visitor struct {
	ID    string  `json:"id"`
	Email *string `json:"email,omitempty"`
	Name  *string `json:"name,omitempty"`
}

// ViewingSession identifies one viewing (named event in the Stats API).
type ViewingSession struct {
	ID string `json:"id"`
}

// LiveEvent is the live event of live_event.registration.
type LiveEvent struct {
	// ID is the live event's hashed ID.
	ID   string `json:"id"`
	Name string `json:"name"`
	URL  string `json:"url"`
	// StartsAt is ISO 8601.
	StartsAt string `json:"starts_at"`
}

// Registration is one sign-up for a live event.
type Registration struct {
	VisitorKey   string `json:"visitor_key"`
	RegisteredAt string `json:"registered_at"`
	// Fields holds the submitted form fields (first_name, last_name, email,
	// company, job_title, phone, country have been seen; all strings).
	Fields map[string]string `json:"fields"`
}

// MediaCreated is the payload of media.created.
type MediaCreated struct {
	Media   *Media   `json:"media"`
	Project *Project `json:"project"`
}

// MediaProcessing is the payload of media.processing.
type MediaProcessing struct {
	Media   *Media   `json:"media"`
	Project *Project `json:"project"`
}

// MediaReady is the payload of media.ready (no project).
type MediaReady struct {
	Media *Media `json:"media"`
}

// MediaFailed is the payload of media.failed (no project).
type MediaFailed struct {
	Media *Media `json:"media"`
}

// MediaUpdated is the payload of media.updated.
type MediaUpdated struct {
	Media   *Media   `json:"media"`
	Project *Project `json:"project"`
	// PreviousAttributes holds the changed attributes with their previous
	// values (for example {"thumbnail": {"url": …}}), kept as raw JSON
	// because any media attribute may appear.
	PreviousAttributes json.RawMessage `json:"previous_attributes"`
}

// MediaTranscriptUpdated is the payload of media.transcript_updated.
type MediaTranscriptUpdated struct {
	Media      *Media      `json:"media"`
	Project    *Project    `json:"project"`
	Transcript *Transcript `json:"transcript"`
}

// MediaTranscriptFailed is the payload of media.transcript_failed.
type MediaTranscriptFailed struct {
	Media      *Media            `json:"media"`
	Project    *Project          `json:"project"`
	Transcript *FailedTranscript `json:"transcript"`
}

// MediaDeleted is the payload of media.deleted.
type MediaDeleted struct {
	Media   *DeletedMedia `json:"media"`
	Project *Project      `json:"project"`
}

// MediaTranslationCreated is the payload of media.translation_created.
type MediaTranslationCreated struct {
	Media      *Media       `json:"media"`
	Project    *Project     `json:"project"`
	Transcript *Translation `json:"transcript"`
}

// MediaLocalizationCreated is the payload of media.localization_created.
type MediaLocalizationCreated struct {
	Media        *Media        `json:"media"`
	Project      *Project      `json:"project"`
	Localization *Localization `json:"localization"`
}

// MediaLocalizationFailed is the payload of media.localization_failed.
type MediaLocalizationFailed struct {
	Media        *Media              `json:"media"`
	Project      *Project            `json:"project"`
	Localization *FailedLocalization `json:"localization"`
}

// ViewingPlay is the payload of viewing_session.play.
type ViewingPlay struct {
	Visitor        *Visitor        `json:"visitor"`
	ViewingSession *ViewingSession `json:"viewing_session"`
	Media          *Media          `json:"media"`
}

// ViewingPercentWatched is the payload of viewing_session.percent_watched.
type ViewingPercentWatched struct {
	Visitor        *Visitor        `json:"visitor"`
	ViewingSession *ViewingSession `json:"viewing_session"`
	// PercentWatched is the threshold reached: 25, 50, 75 or 100.
	PercentWatched *int   `json:"percent_watched"`
	Media          *Media `json:"media"`
}

// ViewingTurnstileConverted is the payload of
// viewing_session.turnstile.converted. Name and Email sit at the top level
// of the payload, not in visitor.
type ViewingTurnstileConverted struct {
	Visitor        *Visitor        `json:"visitor"`
	ViewingSession *ViewingSession `json:"viewing_session"`
	Name           *string         `json:"name,omitempty"`
	Email          string          `json:"email"`
	// Media is the media holding the form.
	Media *Media `json:"media"`
}

// ViewingCallToActionConverted is the payload of
// viewing_session.call_to_action.converted.
type ViewingCallToActionConverted struct {
	Visitor        *Visitor        `json:"visitor"`
	ViewingSession *ViewingSession `json:"viewing_session"`
	// URL is the call to action's target.
	URL   string `json:"url"`
	Media *Media `json:"media"`
}

// ViewingAnnotationConverted is the payload of
// viewing_session.annotation.converted.
type ViewingAnnotationConverted struct {
	Visitor        *Visitor        `json:"visitor"`
	ViewingSession *ViewingSession `json:"viewing_session"`
	// URL is the annotation link's target.
	URL   string `json:"url"`
	Media *Media `json:"media"`
}

// LiveEventRegistration is the payload of live_event.registration.
type LiveEventRegistration struct {
	LiveEvent    *LiveEvent    `json:"live_event"`
	Registration *Registration `json:"registration"`
	// Location holds country, region, city (all strings) as seen.
	Location map[string]string `json:"location"`
	// UTM holds campaign, medium, source as captured at registration.
	UTM map[string]string `json:"utm"`
	// ReferrerURL is the page the registrant came from.
	ReferrerURL string `json:"referrer_url"`
}

// Generic is the payload of a type the catalogue does not know: its
// members kept as raw JSON so nothing is lost.
type Generic struct {
	Fields map[string]json.RawMessage `json:"fields"`
}
