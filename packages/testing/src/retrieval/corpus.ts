import { paraphraseFacts } from "./paraphrases.ts";
import {
  filler,
  firstNames,
  incidentCauses,
  lastNames,
  models,
  namePrefixes,
  nameSuffixes,
  placePrefixes,
  placeSuffixes,
  serviceNouns,
  streets,
} from "./vocabulary.ts";

/**
 * A retrieval-quality corpus built by the project (docs/decisions.md,
 * "Measuring retrieval"): documents of a made-up company — product
 * datasheets, runbooks, incident reports, meeting notes, office guides,
 * policies — in Markdown, HTML and plain text, each holding facts found
 * nowhere else (invented names, codes, numbers, people) among filler that many
 * documents share, and questions labelled with the document and the passage
 * that answers them. The same seed gives the same corpus, byte for byte.
 */
export interface CorpusDocument {
  /** Also its file name: number, name and extension, as `042-quillfeather-x9` with the extension `md`. */
  id: string;
  mediaType: "text/markdown" | "text/html" | "text/plain";
  content: string;
}

/**
 * `rare-term`: the question shares a rare word (an invented name or code)
 * with its document — keyword search's case. `paraphrase`: it shares none and
 * asks by meaning — the embedding model's case.
 */
export type QuestionKind = "rare-term" | "paraphrase";

export interface LabelledQuestion {
  id: string;
  kind: QuestionKind;
  question: string;
  /** The document that answers it. */
  docId: string;
  /** The sentence of that document that answers it, verbatim (one line of the source, no markup inside). */
  passage: string;
  /** The answer, verbatim inside `passage`. */
  answer: string;
}

export interface RetrievalCorpus {
  documents: CorpusDocument[];
  questions: LabelledQuestion[];
}

/** How many documents of each kind; 240 in all. */
const counts = { datasheet: 50, runbook: 40, incident: 40, meeting: 40, site: 40, policy: 30 } as const;
type Kind = keyof typeof counts;
/** Rare-term questions: one for each of this many documents (policies have none: they are distractors). */
const rareTermQuestions = 80;

/**
 * A seeded pseudo-random generator (mulberry32): four lines that cannot change
 * under the corpus, as a dependency's next version could; the figures of one
 * seed stay comparable across revisions.
 */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const shuffle = <T>(items: readonly T[]): T[] => {
    const copy = [...items];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = Math.floor(next() * (i + 1));
      [copy[i], copy[j]] = [copy[j]!, copy[i]!];
    }
    return copy;
  };
  /** Draws from `make` until it gives a value not drawn before: names and numbers unique across the corpus. */
  const drawn = new Set<string>();
  const unique = (make: () => string): string => {
    for (;;) {
      const value = make();
      if (!drawn.has(value)) {
        drawn.add(value);
        return value;
      }
    }
  };
  return { int, pick, shuffle, unique };
}
type Random = ReturnType<typeof generator>;

/** A fact of a document: the sentence that holds it, and the question it answers. */
interface Fact {
  passage: string;
  question: string;
  answer: string;
}

/** A document before rendering: its sections of paragraphs, and the facts among them. */
interface Draft {
  kind: Kind;
  slug: string;
  title: string;
  sections: Array<{ heading: string; paragraphs: string[] }>;
  facts: Fact[];
}

export function retrievalCorpus(seed = 35): RetrievalCorpus {
  const random = generator(seed);
  const names = {
    invented: () => random.unique(() => random.pick(namePrefixes) + random.pick(nameSuffixes)),
    place: () => random.unique(() => random.pick(placePrefixes) + random.pick(placeSuffixes)),
    person: () => random.unique(() => `${random.pick(firstNames)} ${random.pick(lastNames)}`),
    /** Four digits, unique across the corpus: codes, ports and incident numbers never collide. */
    digits: () => random.unique(() => String(random.int(1000, 9999))),
  };
  const drafts: Array<Draft & { fill: Fill }> = [];
  for (const kind of Object.keys(counts) as Kind[])
    for (let i = 0; i < counts[kind]; i++) {
      const fill = filling(random);
      drafts.push({ ...drafters[kind](random, names, fill), fill });
    }

  // The paraphrase facts go, one each, into documents that are not policies, in a "Team notes" section of their own.
  const hosts = random.shuffle(drafts.filter((d) => d.kind !== "policy")).slice(0, paraphraseFacts.length);
  const paraphrases = new Map<Draft & { fill: Fill }, Fact>();
  paraphraseFacts.forEach((template, i) => {
    const person = names.person();
    const host = hosts[i]!;
    const passage = template.fact.replace("{p}", person);
    host.sections.push({
      heading: "Team notes",
      paragraphs: [`${host.fill("notes", 1)} ${passage} ${host.fill("notes", 1)}`],
    });
    paraphrases.set(host, { passage, question: template.question, answer: person });
  });

  const order = random.shuffle(drafts);
  const documents = order.map((draft, i) => render(draft, i));
  const idOf = new Map(order.map((draft, i) => [draft, documents[i]!.id]));

  const questions: LabelledQuestion[] = [];
  const asked = random.shuffle(drafts.filter((d) => d.kind !== "policy")).slice(0, rareTermQuestions);
  for (const draft of asked)
    questions.push({ id: "", kind: "rare-term", docId: idOf.get(draft)!, ...random.pick(draft.facts) });
  for (const [draft, fact] of paraphrases)
    questions.push({ id: "", kind: "paraphrase", docId: idOf.get(draft)!, ...fact });
  return {
    documents,
    questions: random.shuffle(questions).map((q, i) => ({ ...q, id: `q${String(i + 1).padStart(3, "0")}` })),
  };
}

/**
 * Any number of documents like the corpus's — the same kinds, formats and
 * filler, names made unique by a serial number, no questions — one at a time:
 * for benchmarks of ingest and queries at scale (10,000 to 100,000 chunks,
 * 100 MB of text), which need volume rather than labels. Deterministic too.
 */
export function* bulkDocuments(count: number, seed = 35): Generator<CorpusDocument> {
  const random = generator(seed);
  let serial = 0;
  const names: Names = {
    invented: () => `${random.pick(namePrefixes)}${random.pick(nameSuffixes)}${++serial}`,
    place: () => `${random.pick(placePrefixes)}${random.pick(placeSuffixes)}${++serial}`,
    person: () => `${random.pick(firstNames)} ${random.pick(lastNames)}`,
    digits: () => String(random.int(1000, 99999)),
  };
  const kinds = Object.keys(counts) as Kind[];
  for (let i = 0; i < count; i++) yield render(drafters[random.pick(kinds)](random, names, filling(random)), i);
}

/** Filler for one document: each kind's sentences dealt from a shuffled deck, so a document does not repeat itself. */
function filling(random: Random): Fill {
  const decks = new Map<keyof typeof filler, string[]>();
  return (kind, count) => {
    const deck = decks.get(kind) ?? [];
    if (deck.length < count) deck.push(...random.shuffle(filler[kind]));
    decks.set(kind, deck);
    return deck.splice(0, count).join(" ");
  };
}

type Names = Record<"invented" | "place" | "person" | "digits", () => string>;
type Fill = (kind: keyof typeof filler, count: number) => string;

const drafters: Record<Kind, (random: Random, names: Names, fill: Fill) => Draft> = {
  datasheet(random, names, fill) {
    const product = `${names.invented()} ${random.pick(models)}`;
    const code = `${product.slice(0, 2).toUpperCase()}-${names.digits()}`;
    const grams = random.int(120, 2400);
    const hours = random.int(6, 96);
    const [low, high] = [-random.int(5, 40), random.int(35, 70)];
    const facts: Fact[] = [
      {
        passage: `The ${product} weighs ${grams} grams without its mounting bracket.`,
        question: `How much does the ${product} weigh?`,
        answer: `${grams} grams`,
      },
      {
        passage: `On a full charge the ${product} runs for ${hours} hours.`,
        question: `What is the battery life of the ${product}?`,
        answer: `${hours} hours`,
      },
      {
        passage: `Part code ${code} identifies the ${product} in the ordering system.`,
        question: `Which product has the part code ${code}?`,
        answer: product,
      },
      {
        passage: `The ${product} operates between ${low} °C and ${high} °C.`,
        question: `What temperature range can the ${product} work in?`,
        answer: `${low} °C and ${high} °C`,
      },
    ];
    return {
      kind: "datasheet",
      slug: product,
      title: `${product} datasheet`,
      facts,
      sections: [
        { heading: "Overview", paragraphs: [`${fill("datasheet", 3)} ${facts[2]!.passage}`, fill("datasheet", 2)] },
        { heading: "Specifications", paragraphs: [facts[0]!.passage, facts[1]!.passage, facts[3]!.passage] },
        { heading: "Installation", paragraphs: [fill("datasheet", 3), fill("datasheet", 2)] },
        {
          heading: "Support",
          paragraphs: [`Questions about this product go to ${names.person()}. ${fill("datasheet", 1)}`],
        },
      ],
    };
  },
  runbook(random, names, fill) {
    const service = `${names.invented()} ${random.pick(serviceNouns)}`;
    const port = names.digits();
    const seconds = random.int(15, 600);
    const lead = names.person();
    const facts: Fact[] = [
      {
        passage: `The ${service} listens on port ${port} behind the internal load balancer.`,
        question: `Which port does the ${service} listen on?`,
        answer: port,
      },
      {
        passage: `If its primary region fails, the ${service} moves to the standby region within ${seconds} seconds.`,
        question: `How quickly does the ${service} fail over to the standby region?`,
        answer: `${seconds} seconds`,
      },
      {
        passage: `Pages for the ${service} go to the on-call rotation led by ${lead}.`,
        question: `Who leads the on-call rotation for the ${service}?`,
        answer: lead,
      },
    ];
    return {
      kind: "runbook",
      slug: service,
      title: `Runbook: ${service}`,
      facts,
      sections: [
        { heading: "Purpose", paragraphs: [`${fill("runbook", 2)} ${facts[0]!.passage}`] },
        { heading: "Before you start", paragraphs: [fill("runbook", 3)] },
        { heading: "Failover", paragraphs: [`${facts[1]!.passage} ${fill("runbook", 2)}`, fill("runbook", 2)] },
        { heading: "Escalation", paragraphs: [`${facts[2]!.passage} ${fill("runbook", 1)}`] },
      ],
    };
  },
  incident(random, names, fill) {
    const id = `INC-${random.int(2021, 2025)}-${names.digits()}`;
    const minutes = random.int(7, 480);
    const customers = random.int(12, 9000);
    const cause = random.pick(incidentCauses);
    const facts: Fact[] = [
      {
        passage: `Incident ${id} lasted ${minutes} minutes and affected ${customers} customers.`,
        question: `How long did incident ${id} last?`,
        answer: `${minutes} minutes`,
      },
      {
        passage: `The root cause of ${id} was ${cause}.`,
        question: `What was the root cause of incident ${id}?`,
        answer: cause,
      },
    ];
    return {
      kind: "incident",
      slug: id,
      title: `Incident report ${id}`,
      facts,
      sections: [
        { heading: "Summary", paragraphs: [`${facts[0]!.passage} ${fill("incident", 2)}`] },
        { heading: "Timeline", paragraphs: [fill("incident", 3), fill("incident", 2)] },
        { heading: "Root cause", paragraphs: [`${facts[1]!.passage} ${fill("incident", 1)}`] },
        { heading: "Follow-up", paragraphs: [fill("incident", 3)] },
      ],
    };
  },
  meeting(random, names, fill) {
    const project = `Project ${names.invented()}`;
    const budget = `${random.int(40, 900)},000 euros`;
    const day = `${random.int(1, 28)} ${random.pick(["March", "May", "June", "September", "October", "November"])}`;
    const facts: Fact[] = [
      {
        passage: `The steering group approved a budget of ${budget} for ${project}.`,
        question: `What budget was approved for ${project}?`,
        answer: budget,
      },
      {
        passage: `${project} must reach its first milestone by ${day}.`,
        question: `When is the first milestone of ${project} due?`,
        answer: day,
      },
    ];
    const attendees = [names.person(), names.person(), names.person()].join(", ");
    return {
      kind: "meeting",
      slug: project,
      title: `${project} steering group, meeting notes`,
      facts,
      sections: [
        { heading: "Attendees", paragraphs: [attendees] },
        { heading: "Discussion", paragraphs: [fill("meeting", 3), fill("meeting", 2)] },
        { heading: "Decisions", paragraphs: [`${facts[0]!.passage} ${facts[1]!.passage} ${fill("meeting", 1)}`] },
        { heading: "Next steps", paragraphs: [fill("meeting", 2)] },
      ],
    };
  },
  site(random, names, fill) {
    const place = names.place();
    const network = `${names.invented()}-guest`;
    const address = `${random.int(2, 240)} ${random.pick(streets)}`;
    const manager = names.person();
    const facts: Fact[] = [
      {
        passage: `The guest Wi-Fi network at the ${place} office is called ${network}.`,
        question: `What is the guest Wi-Fi network called at the ${place} office?`,
        answer: network,
      },
      {
        passage: `The ${place} office is at ${address}.`,
        question: `What is the street address of the ${place} office?`,
        answer: address,
      },
      {
        passage: `The facility manager in ${place} is ${manager}.`,
        question: `Who is the facility manager in ${place}?`,
        answer: manager,
      },
    ];
    return {
      kind: "site",
      slug: `${place} office`,
      title: `Office guide: ${place}`,
      facts,
      sections: [
        { heading: "Getting here", paragraphs: [`${facts[1]!.passage} ${fill("site", 2)}`] },
        { heading: "On site", paragraphs: [fill("site", 3), `${facts[0]!.passage} ${fill("site", 1)}`] },
        { heading: "Contacts", paragraphs: [`${facts[2]!.passage} ${fill("site", 2)}`] },
      ],
    };
  },
  policy(random, _names, fill) {
    const topic = random.pick(["Travel", "Expenses", "Remote work", "Equipment", "Security", "Leave"]);
    return {
      kind: "policy",
      slug: `${topic} policy`,
      title: `${topic} policy`,
      facts: [],
      sections: [
        { heading: "Scope", paragraphs: [fill("policy", 3)] },
        { heading: "Rules", paragraphs: [fill("policy", 4), fill("policy", 3)] },
        { heading: "Review", paragraphs: [fill("policy", 2)] },
      ],
    };
  },
};

const formats: Record<Kind, { extension: string; mediaType: CorpusDocument["mediaType"] }> = {
  datasheet: { extension: "md", mediaType: "text/markdown" },
  runbook: { extension: "md", mediaType: "text/markdown" },
  policy: { extension: "md", mediaType: "text/markdown" },
  incident: { extension: "html", mediaType: "text/html" },
  site: { extension: "html", mediaType: "text/html" },
  meeting: { extension: "txt", mediaType: "text/plain" },
};

function render(draft: Draft, index: number): CorpusDocument {
  const { extension, mediaType } = formats[draft.kind];
  const slug = draft.slug.toLowerCase().replace(/[^a-z0-9]+/g, "-");
  const id = `${String(index + 1).padStart(3, "0")}-${slug}.${extension}`;
  const body = draft.sections;
  const content =
    extension === "md"
      ? [`# ${draft.title}`, ...body.flatMap((s) => [`## ${s.heading}`, ...s.paragraphs])].join("\n\n")
      : extension === "html"
        ? [
            "<!doctype html>",
            `<html lang="en"><head><meta charset="utf-8"><title>${draft.title}</title></head>`,
            "<body>",
            '<nav><a href="/">Intranet</a> | <a href="/search">Search</a></nav>',
            `<main>\n<h1>${draft.title}</h1>`,
            ...body.flatMap((s) => [`<h2>${s.heading}</h2>`, ...s.paragraphs.map((p) => `<p>${p}</p>`)]),
            "</main>",
            "<footer>Internal use only.</footer>",
            "</body></html>",
          ].join("\n")
        : [
            `${draft.title}\n${"=".repeat(draft.title.length)}`,
            ...body.flatMap((s) => [`${s.heading}:`, ...s.paragraphs]),
          ].join("\n\n");
  return { id, mediaType, content: `${content}\n` };
}
