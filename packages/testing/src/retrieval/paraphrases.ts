/**
 * Facts about people, each with a question that asks for the person by
 * meaning only: the question shares no rare word with the fact (a test of the
 * corpus checks it), so keyword search has little to go on and an embedding
 * model has to recognise the paraphrase. `{p}` is the person's name, the answer.
 */
export const paraphraseFacts: ReadonlyArray<{ fact: string; question: string }> = [
  {
    fact: "{p} looks after the three beehives on the roof terrace and bottles the honey for colleagues every September.",
    question: "Who keeps bees on top of our building and shares what they produce each autumn?",
  },
  {
    fact: "{p} cycles forty kilometres to work and back every day, even through the January snow.",
    question: "Which colleague rides a bike a very long way to the office daily, whatever the weather?",
  },
  {
    fact: "When the espresso machine broke for the third time, {p} replaced it with a hand-cranked grinder and a French press.",
    question: "Who got rid of the faulty caffeine appliance in favour of brewing manually?",
  },
  {
    fact: "{p} speaks fluent Icelandic and translates the customer letters that arrive from Reykjavik.",
    question: "Who handles correspondence written in the language of a Nordic island nation?",
  },
  {
    fact: "{p} ran the Berlin marathon last spring in just under three hours.",
    question: "Which employee finished a very long running race in Germany's capital city?",
  },
  {
    fact: "{p} restored a 1967 sailing boat over four summers and now takes the sales team out on the lake.",
    question: "Who rebuilt an old yacht and invites salespeople on trips across the water?",
  },
  {
    fact: "Every Friday {p} bakes sourdough bread in the staff kitchen and leaves the loaves by the printer.",
    question: "Who makes fermented-dough baked goods at work at the end of each week?",
  },
  {
    fact: "{p} is allergic to peanuts, so catering orders for the quarterly offsite never include nuts.",
    question: "Because of whose food intolerance are certain legumes banned from event menus?",
  },
  {
    fact: "{p} taught the whole support desk to touch-type, and average ticket replies became noticeably faster.",
    question: "Who coached the helpdesk staff on keyboarding without looking?",
  },
  {
    fact: "{p} volunteers at the animal shelter on weekends and once brought a rescued greyhound to the all-hands meeting.",
    question:
      "Which colleague helps out caring for abandoned pets and once showed up with a racing dog at a company gathering?",
  },
  {
    fact: "{p} collects vintage typewriters; forty of them line the shelves of the second-floor library.",
    question: "Whose hobby of gathering old mechanical writing machines fills the bookcases upstairs?",
  },
  {
    fact: "{p} negotiated the contract that cut the electricity bill for the data hall by a fifth.",
    question: "Who secured the deal that lowered power costs for the server room?",
  },
  {
    fact: "{p} plays cello in the city orchestra and rehearses on Tuesday evenings.",
    question: "Which staff member performs with a string instrument in a symphony ensemble?",
  },
  {
    fact: "{p} organised the winter charity auction that raised money for the children's hospital.",
    question: "Who arranged the cold-season fundraising sale for a paediatric clinic?",
  },
  {
    fact: "{p} designed the company logo in the early days, sketching it on a paper napkin at a train station.",
    question: "Who drew the original brand emblem on a serviette while waiting for a railway connection?",
  },
  {
    fact: "{p} grows tomatoes and chillies in the greenhouse behind the car park.",
    question: "Who cultivates vegetables in a glass garden near where staff leave their vehicles?",
  },
  {
    fact: "{p} once saved a flooded basement switch room with nothing but sandbags and a borrowed pump.",
    question: "Who rescued the network equipment when water poured into the lower level?",
  },
  {
    fact: "{p} is learning Japanese and leads a lunchtime conversation club on Wednesdays.",
    question: "Who runs a midday group for practising the language spoken in Tokyo?",
  },
  {
    fact: "{p} photographs birds at dawn; the prints in the reception area are all from the estuary nearby.",
    question: "Whose early-morning wildlife pictures decorate the entrance lobby?",
  },
  {
    fact: "{p} built the wooden standing desks in the design studio from reclaimed oak floorboards.",
    question: "Who crafted the tall workstations out of recycled timber?",
  },
  {
    fact: "{p} refuses to fly and travels to every customer visit by overnight train.",
    question: "Which colleague avoids aeroplanes and takes sleeper rail journeys for client trips?",
  },
  {
    fact: "{p} writes crossword puzzles for the internal newsletter, and nobody has solved the March one yet.",
    question: "Who composes the word games in the staff bulletin?",
  },
  {
    fact: "{p} keeps a tank of tropical fish in the finance corner and feeds them at nine sharp.",
    question: "Who maintains an aquarium in the accounting area?",
  },
  {
    fact: "{p} climbed Kilimanjaro to raise funds for clean drinking water projects.",
    question: "Who reached the summit of Africa's highest mountain for a good cause?",
  },
  {
    fact: "{p} brought in the rule that meetings end five minutes before the hour so people can stretch.",
    question: "Who introduced the habit of finishing calls early to leave time for a short pause?",
  },
  {
    fact: "{p} repairs old radios as a hobby and brought the dead intercom in the warehouse back to life.",
    question: "Whose pastime of fixing vintage electronics saved the storage depot's speaker system?",
  },
  {
    fact: "{p} coaches the company football team, which won the regional five-a-side league twice.",
    question: "Who trains our soccer squad that became local champions?",
  },
  {
    fact: "{p} translated the onboarding handbook into Portuguese for the new hires in Lisbon.",
    question: "Who made a version of the guide for newcomers in the language of Brazil?",
  },
  {
    fact: "{p} knits scarves for every new starter during their first winter with the company.",
    question: "Who makes woollen neckwear by hand as a gift for recent joiners?",
  },
  {
    fact: "{p} spotted the billing error that would have charged one customer twice for a whole year.",
    question: "Who caught the invoicing mistake that nearly billed a client two times over for twelve months?",
  },
  {
    fact: "{p} joined the team after ten years as a navigator in the merchant navy.",
    question: "Which colleague previously steered cargo vessels across the oceans for a decade?",
  },
  {
    fact: "{p} set up the lending library of board games in the kitchen lounge.",
    question: "Who started a shelf of tabletop pastimes that staff can borrow?",
  },
  {
    fact: "{p} insisted on plain-language error messages, and support calls about the installer halved.",
    question: "Who pushed for clearer wording when software fails, reducing helpline contacts?",
  },
  {
    fact: "{p} grew up on a lighthouse island and still visits the keeper every summer.",
    question: "Who was raised on a small isle with a coastal beacon tower?",
  },
  {
    fact: "{p} mentors the interns and runs a code review clinic every Thursday afternoon.",
    question: "Who guides the trainees and holds weekly sessions checking their programs?",
  },
  {
    fact: "{p} drives an electric van and installed the charging points in the visitor car park.",
    question: "Who put in the plugs where guests can top up battery-powered automobiles?",
  },
  {
    fact: "{p} wrote the original billing engine in a single weekend before the first customer launch.",
    question: "Who built the first invoicing system in two days ahead of the initial release?",
  },
  {
    fact: "{p} has a pilot's licence and flies a small seaplane to the lake house in August.",
    question: "Who holds aviation credentials and takes a floatplane to a summer cabin?",
  },
  {
    fact: "{p} keeps the first-aid kit stocked and is the trained responder for the third floor.",
    question: "Who is the designated medical helper for that level and restocks the bandages?",
  },
  {
    fact: "{p} arranged for the rooftop solar panels that now cover a third of the building's daytime power.",
    question: "Who organised the sun-powered energy installation on top of the offices?",
  },
  {
    fact: "{p} speaks at conferences about accessibility and audits every new screen with a screen reader.",
    question: "Who checks that interfaces work for blind users and gives talks on inclusive design?",
  },
  {
    fact: "{p} adopted two retired racehorses and keeps them at a farm outside town.",
    question: "Who took in a pair of former track horses?",
  },
  {
    fact: "{p} swims in the sea every morning of the year, including New Year's Day.",
    question: "Who takes an ocean dip daily, even in midwinter?",
  },
  {
    fact: "{p} compiled the glossary of internal acronyms that every new hire receives.",
    question: "Who put together the list of abbreviations handed to newcomers?",
  },
  {
    fact: "{p} reorganised the warehouse shelving so that picking an order takes half as long.",
    question: "Who rearranged the storage racks to make fulfilment twice as quick?",
  },
  {
    fact: "{p} was a professional chess player before joining and still gives simultaneous exhibitions at the summer party.",
    question: "Which colleague used to compete at the royal board game for a living?",
  },
  {
    fact: "{p} looks after the office's vinyl record collection and plays jazz on Friday afternoons.",
    question: "Who takes care of the LP albums and puts on music at the end of the week?",
  },
  {
    fact: "{p} learned sign language so that deaf customers can be served directly at the front counter.",
    question: "Who studied a gestural means of communication to help hearing-impaired clients?",
  },
];
