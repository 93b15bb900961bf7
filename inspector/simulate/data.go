package simulate

import "strings"

// The word lists below are read-only: generators pick from them, never
// change them.

var mediaNames = []string{
	"Product tour", "Intro", "Onboarding walkthrough", "Q3 all-hands recap", "Customer story: Northwind",
	"Pricing explained", "Feature deep dive: Webhooks", "Launch trailer", "How to set up SSO",
	"Release notes – March", "Getting started in 5 minutes", "Founder's welcome", "Support: resetting your password",
}

var projectNames = []string{"Marketing", "Product", "Support videos", "Sales enablement", "Webinars", "Customer stories", "Internal"}

var companySlugs = []string{"acme", "northwind", "globex", "initech", "umbrella", "hooli", "vandelay"}

var companies = []string{"Acme Corp", "Northwind Traders", "Globex", "Initech", "Vandelay Industries", "Stark Logistics", "Wayne Foods"}

var firstNames = []string{"Jane", "Amir", "Sofia", "Kenji", "Olivia", "Mateo", "Priya", "Lukas", "Chloé", "Noah"}

var lastNames = []string{"Doe", "Haddad", "Rossi", "Tanaka", "Smith", "García", "Patel", "Müller", "Martin", "Okafor"}

var jobTitles = []string{"Marketing Manager", "Developer", "Head of Growth", "Product Designer", "CTO", "Video Producer"}

var countries = []string{"US", "DE", "FR", "GB", "JP", "BR", "IN", "CA"}

var regions = []string{"California", "Bavaria", "Île-de-France", "England", "Tokyo", "São Paulo", "Maharashtra", "Ontario"}

var cities = []string{"San Francisco", "Munich", "Paris", "London", "Tokyo", "São Paulo", "Mumbai", "Toronto"}

var campaigns = []string{"spring-launch", "webinar-series", "product-week", "newsletter-april"}

var liveEventNames = []string{"Launch webinar", "Quarterly product update", "Ask me anything: video SEO", "Customer summit keynote"}

var ctaPaths = []string{"pricing", "demo", "signup", "contact-sales", "ebook/video-marketing"}

var transcriptFailures = []string{
	"The audio track is silent.",
	"The language could not be detected.",
	"The media is too short to caption.",
}

type language struct {
	iso3, code, locale, name, native, text string
}

var languages = []language{
	{"fra", "fr", "fr-FR", "French", "Français", "Bonjour et bienvenue.\nDans cette vidéo, nous vous montrons le produit."},
	{"deu", "de", "de-DE", "German", "Deutsch", "Hallo und willkommen.\nIn diesem Video zeigen wir Ihnen das Produkt."},
	{"spa", "es", "es-MX", "Spanish", "Español", "Hola y bienvenidos.\nEn este video le mostramos el producto."},
	{"jpn", "ja", "ja", "Japanese", "日本語", "こんにちは、ようこそ。\nこのビデオでは製品をご紹介します。"},
	{"por", "pt", "pt-BR", "Portuguese", "Português", "Olá e bem-vindo.\nNeste vídeo mostramos o produto."},
	{"eng", "en", "en-US", "English", "English", "Hello and welcome.\nIn this video we show you the product."},
}

func (g *Generator) language() language { return languages[g.rng.IntN(len(languages))] }

func lower(s string) string {
	r := strings.NewReplacer("é", "e", "í", "i", "ü", "u", "ç", "c", "ã", "a", "á", "a")
	return r.Replace(strings.ToLower(s))
}

func slug(s string) string {
	s = lower(s)
	s = strings.ReplaceAll(s, " ", "-")
	return s
}
