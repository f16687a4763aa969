"""A second dev set that is not LoCoMo-shaped: long user-assistant conversations.

Deterministic (seeded) and written here, so nothing downloads: ``python -m bench.longchat
[--out PATH] [--seed N]`` writes a LoCoMo-format file (``bench/locomo.py --data PATH`` and
``bench/ablate.py`` read it). Each conversation is one user talking to an assistant over
``SESSIONS`` sessions months apart; each session is about one subject. What LoCoMo lacks:

- **long assistant answers** (150-600 words, most past MiniLM's 256-token window), each
  holding one specific piece of advice somewhere in it, often past its first 256 tokens;
- **facts that are updated**: the user states where they live, work, what pet they have,
  what they eat..., and later changes some of them ("we left Lisbon, I'm in Porto now");
- **questions in other words** than the turns (paraphrased), in first and second person.

Questions (``qa``, with ``evidence`` turn ids ``D<session>:<turn>``), by category:
1 history of an updated fact (evidence: the first statement and the update), 2 temporal
(what the user asked about in a month or on a date), 3 an assistant answer's detail
(evidence: that answer), 4 a fact's current value (evidence: its latest statement).
Speakers are ``User`` and ``Assistant``; every turn carries its session's date.
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "data" / "longchat_dev.json"
CONVERSATIONS = 6
SESSIONS = 8

#: Subjects the user asks about: (name, the user's opening request, filler sentences of
#: the assistant's answers, details (the advice a question asks about later: the sentence
#: in the answer, the question, how the user asks about it again).
SUBJECTS: list[dict[str, Any]] = [
    {"name": "sourdough baking", "ask": [
        "Can you help me get a sourdough routine going? My loaves come out flat.",
        "I want to bake bread at home on weekends, where do I start with a starter?"],
     "filler": [
        "A healthy starter doubles within a few hours of feeding and smells pleasantly sour.",
        "Flat loaves usually mean the dough was underproofed or the gluten was not developed.",
        "Use a kitchen scale rather than cups, because flour density varies a lot.",
        "Stretch and folds every half hour during bulk fermentation build strength gently.",
        "A banneton dusted with rice flour keeps the dough from sticking overnight.",
        "Whole wheat flour ferments faster than white flour, so watch the dough, not the clock.",
        "Scoring the loaf lets steam escape in a controlled way and gives the ear its shape.",
        "Baking in a preheated Dutch oven traps steam for the first part of the bake.",
        "Let the bread cool completely before slicing or the crumb turns gummy.",
        "Keep notes on temperatures and timings so you can repeat a good bake.",
        "Salt slows fermentation slightly and tightens the gluten network.",
        "An autolyse of flour and water before adding the starter improves extensibility."],
     "details": [
        ("Keep the starter somewhere around 26 degrees Celsius; a warm spot on top of the "
         "fridge works well.", "What temperature did you say my starter should be kept at?"),
        ("Aim for a dough hydration of 72 percent until you are comfortable shaping wetter "
         "doughs.", "How wet did you tell me to make the dough at first?"),
        ("Retard the shaped loaf in the fridge for 14 hours for a more open crumb.",
         "How long should the shaped loaf rest in the refrigerator?")]},
    {"name": "marathon training", "ask": [
        "I signed up for my first marathon. How should I structure the training?",
        "Could you put together a running plan? I keep getting injured when I add miles."],
     "filler": [
        "Most of your weekly running should be at an easy, conversational pace.",
        "Increase weekly mileage gradually and take a lighter week every fourth week.",
        "Strength work for the hips and calves reduces the most common running injuries.",
        "Long runs teach your body to burn fat and your mind to stay patient.",
        "Practise race nutrition during long runs, never for the first time on race day.",
        "Sleep is when adaptation happens, so protect it during heavy training blocks.",
        "Shoes matter less than consistency, but replace them when the cushioning is gone.",
        "A taper in the final weeks lets the fatigue clear while the fitness stays.",
        "Hill repeats build leg strength and running economy with less impact than speed work.",
        "If a pain changes your stride, stop the run and rest rather than pushing through.",
        "Running with a group makes the early morning sessions much easier to keep.",
        "Hydration needs vary a lot with heat, so weigh yourself before and after long runs."],
     "details": [
        ("Cap your longest training run at 32 kilometres three weeks before the race.",
         "What was the longest run you suggested before race day?"),
        ("Take an energy gel every 40 minutes during the race, starting early.",
         "How often should I be taking gels during the marathon?"),
        ("Keep the easy runs at a heart rate below 145 beats per minute.",
         "What heart rate limit did you give me for easy runs?")]},
    {"name": "a vegetable garden", "ask": [
        "I finally have a small backyard. What should I grow in a first vegetable garden?",
        "My tomatoes keep failing. Can you help me plan the garden properly this year?"],
     "filler": [
        "Start small: a few well tended beds beat a large neglected plot.",
        "Most vegetables want at least six hours of direct sun a day.",
        "Mulch keeps the soil moist, suppresses weeds and feeds the soil as it breaks down.",
        "Water deeply and less often so that roots grow down instead of staying shallow.",
        "Rotate crop families between beds each year to avoid soil-borne diseases.",
        "Compost improves almost any soil, whether it is heavy clay or fast-draining sand.",
        "Companion plants like marigolds attract beneficial insects to the beds.",
        "Harvest often: many plants produce more when they are picked regularly.",
        "Raised beds warm up earlier in spring and drain better after heavy rain.",
        "Keep a garden diary of what you planted where and how it did.",
        "Slugs are easiest to control in the evening, when they come out to feed.",
        "Seedlings grown indoors need to be hardened off for a week before planting out."],
     "details": [
        ("Plant the tomatoes 60 centimetres apart so air can move between them and blight "
         "stays away.", "How far apart should the tomato plants go?"),
        ("Sow the carrot seeds only 1 centimetre deep and keep the surface damp until they "
         "sprout.", "How deep did you say to sow carrots?"),
        ("Test the soil pH and aim for 6.5, slightly acidic, for most vegetables.",
         "Which soil acidity level did you recommend?")]},
    {"name": "personal finance", "ask": [
        "I want to get my finances in order. Where should I begin with budgeting?",
        "How do I start investing without taking silly risks?"],
     "filler": [
        "Track every expense for a month before you try to set a budget.",
        "Pay off high interest debt before you invest in anything else.",
        "Automate savings on payday so the money never sits in your current account.",
        "Low cost index funds spread your risk across many companies at once.",
        "Do not invest money you may need within the next few years.",
        "Check the fees of any fund, because small percentages compound over decades.",
        "Review your subscriptions; forgotten ones add up surprisingly fast.",
        "Keep your investment plan simple enough that you will stick to it in a downturn.",
        "A pension with an employer match is free money you should not leave on the table.",
        "Write down your goals so each saving has a purpose and a deadline.",
        "Rebalancing once a year keeps your mix of assets where you intended it.",
        "Insurance protects the plan against the events you cannot absorb yourself."],
     "details": [
        ("Build an emergency fund of 4 months of expenses before investing.",
         "How many months of costs should my safety buffer cover?"),
        ("Put 15 percent of your take-home pay toward savings and investments.",
         "What share of my income did you advise me to save?"),
        ("Use the 50/30/20 split: needs, wants, then savings.",
         "Which budgeting rule did you recommend?")]},
    {"name": "learning Python", "ask": [
        "I'd like to learn programming to automate my spreadsheets. Is Python a good start?",
        "My Python scripts are a mess. How should I organise a small project?"],
     "filler": [
        "Python reads almost like plain English, which makes it a friendly first language.",
        "Write small scripts that solve your own problems; motivation matters more than syntax.",
        "Use a virtual environment per project so dependencies do not collide.",
        "Read error messages from the bottom up: the last line names the actual problem.",
        "Functions that do one thing are easier to test and to reuse.",
        "Version control with git lets you experiment without fear of losing work.",
        "Automated tests catch the mistakes you would otherwise find in production.",
        "Type hints document what a function expects and let tools check your code.",
        "Break a large problem into steps and get each one working before the next.",
        "Reading other people's code is one of the fastest ways to improve.",
        "A linter and a formatter remove a whole class of style discussions.",
        "Keep configuration out of the code so the same script runs in several places."],
     "details": [
        ("For spreadsheets, use the openpyxl library to read and write the workbook files.",
         "Which library did you suggest for my Excel files?"),
        ("Spend 25 minutes a day practising rather than one long session a week.",
         "How much daily practice time did you recommend?"),
        ("Put the tests in a tests folder and run them with pytest before every commit.",
         "What tool did you tell me to run my tests with?")]},
    {"name": "a trip to Japan", "ask": [
        "I'm planning two weeks in Japan next spring. Can you help with the itinerary?",
        "What should I know before travelling around Japan by train?"],
     "filler": [
        "Spring and autumn are the most comfortable seasons for travelling in Japan.",
        "Book accommodation early if your dates overlap with the cherry blossom season.",
        "Trains are punctual to the minute, so plan connections with that in mind.",
        "Many smaller restaurants take only cash, so keep some yen with you.",
        "A rechargeable transit card works on most city trains, buses and convenience stores.",
        "Sending luggage ahead between hotels makes train travel much easier.",
        "Temples and shrines open early; visiting at opening time avoids the crowds.",
        "Slow down: fewer cities with more time in each make a better trip.",
        "A pocket wifi or a local data plan helps with maps and translation.",
        "Tipping is not customary and can even cause confusion.",
        "Regional trains and buses reach the small towns the bullet trains skip.",
        "Staying one night in a ryokan gives you a traditional bath and dinner."],
     "details": [
        ("Buy the 14-day Japan Rail Pass before you leave; it covers the Shinkansen trips.",
         "Which rail ticket did you tell me to get before flying out?"),
        ("Spend 3 nights in Kanazawa for the gardens and the old geisha district.",
         "How many nights did you suggest for Kanazawa?"),
        ("Reserve the Ghibli Museum tickets exactly one month ahead, on the 10th.",
         "When do the museum tickets go on sale according to you?")]},
]

#: Facts about the user that a question asks about, and how they are said and updated:
#: slot -> (values, how the user states a value, how they state a change, the question
#: about the current value, the question about the history).
SLOTS: dict[str, dict[str, Any]] = {
    "city": {"values": ["Lisbon", "Porto", "Utrecht", "Leeds", "Valencia", "Gdansk",
                        "Tampere", "Graz"],
             "say": ["By the way, I live in {v}, so keep the local season in mind.",
                     "For context, I'm based in {v} at the moment."],
             "change": ["Big news: we moved out of {old} last month, we're settled in {v} now.",
                        "We finally relocated from {old} to {v}, so the weather is different."],
             "now": "Which city am I living in these days?",
             "was": "Where did I live before my move, and where did I go?"},
    "job": {"values": ["a hospital pharmacist", "a secondary school teacher",
                       "a civil engineer", "a bakery owner", "a data analyst",
                       "a museum curator", "a nurse on night shifts", "a bus driver"],
            "say": ["Some background: I work as {v}, so my free time is limited.",
                    "I'm {v}, which is why evenings are my only free time."],
            "change": ["Update on my side: I quit being {old} and started as {v}.",
                       "I changed careers, no longer {old}; I now work as {v}."],
            "now": "What do I do for a living now?",
            "was": "What was my previous occupation before the career change, and the new one?"},
    "pet": {"values": ["a beagle called Pixel", "a grey cat named Mochi",
                       "two rabbits, Salt and Pepper", "a parrot called Kiwi",
                       "a border collie named Fern", "an old tabby called Biscuit"],
            "say": ["My companion at home is {v}, who follows me everywhere.",
                    "I share the flat with {v}."],
            "change": ["Sad news, {old} passed away in the spring; we adopted {v} since.",
                       "We rehomed {old} with my parents and took in {v}."],
            "now": "Which animal lives with me now?",
            "was": "What pet did I have first and what animal replaced it?"},
    "diet": {"values": ["vegetarian", "vegan", "pescatarian", "gluten free",
                        "on a low carb diet"],
             "say": ["Note that I'm {v}, so adapt any food suggestions.",
                     "Also, food wise I am {v}."],
             "change": ["I stopped being {old}; my doctor put me on a new plan, now I'm {v}.",
                        "Diet change: after years {old} I've switched and I'm {v} now."],
             "now": "What are my current eating restrictions?",
             "was": "How has my diet changed over time?"},
}

MONTH_Q = ["What did I ask you about in {month}?", "Which subject did we discuss in {month}?"]
DATE_Q = ["What did I want help with on {date}?", "What was our conversation on {date} about?"]


#: What an assistant says around its advice whatever the subject (shared words across
#: subjects, as in real answers).
GENERIC = [
    "Everyone's situation is different, so adjust this to what actually works for you.",
    "If you want, I can turn this into a short checklist you can print.",
    "The most important thing is to be consistent rather than perfect.",
    "Let me know how it goes and we can adjust the plan together next time.",
    "It is normal for the first few attempts to feel awkward; that passes quickly.",
    "Start with the basics and add complexity only once they feel routine.",
    "Keep a simple log so you can see your progress over the weeks.",
    "Do not try to change everything at once; pick one thing and build from there.",
    "There is a lot of conflicting advice online, so trust what your own results show.",
    "A good rule of thumb is to review what worked at the end of every month.",
]


def _answer(rng: random.Random, subject: dict[str, Any], detail: str | None) -> str:
    """A long assistant answer (150-600 words): the subject's sentences and general ones,
    the detail somewhere in it (in the last third every other time: past MiniLM's window)."""
    sents = rng.sample(subject["filler"], rng.randint(7, 12))
    sents += rng.sample(GENERIC, rng.randint(2, 8))
    rng.shuffle(sents)
    if rng.random() < 0.5:  # a longer answer: the subject's sentences again, reworded
        sents += [f"To repeat the key point: {x[0].lower()}{x[1:]}"
                  for x in rng.sample(subject["filler"], rng.randint(4, 10))]
    n = len(sents)
    if detail is not None:
        at = rng.randint(n * 2 // 3, n) if rng.random() < 0.5 else rng.randint(0, n // 3)
        sents.insert(at, detail)
    return "\n\n".join(" ".join(sents[i:i + 4]) for i in range(0, len(sents), 4))


def _conversation(rng: random.Random, idx: int) -> dict[str, Any]:
    subjects = rng.sample(SUBJECTS, 4)
    # each subject comes up twice; its three details are spread over both visits, never
    # repeated (a question has one answer turn)
    left = {sub["name"]: rng.sample(sub["details"], 3) for sub in subjects}
    slots = {name: rng.sample(s["values"], 2) for name, s in SLOTS.items()}
    updated = sorted(rng.sample(sorted(SLOTS), 3))  # a list: set order varies per process
    # when each slot is stated (session, first time) and changed (a later session)
    said_in = {name: rng.randint(1, 3) for name in SLOTS}
    changed_in = {name: rng.randint(5, SESSIONS) for name in updated}
    start = datetime(2023, 1, 9) + timedelta(days=17 * idx)
    conv: dict[str, Any] = {"speaker_a": "User", "speaker_b": "Assistant"}
    qa: list[dict[str, Any]] = []
    where: dict[str, list[str]] = {}
    when = start
    for s in range(1, SESSIONS + 1):
        when += timedelta(days=rng.randint(18, 40))
        subject = subjects[(s - 1) % len(subjects)]
        when = when.replace(hour=rng.randint(8, 21), minute=rng.choice((0, 15, 30, 45)))
        conv[f"session_{s}_date_time"] = when.strftime("%-I:%M %p on %-d %B, %Y")
        details = left[subject["name"]][:2] if s <= len(subjects) else left[subject["name"]][2:]
        turns = _session(rng, s, subject, details, (slots, said_in, changed_in), where, qa)
        conv[f"session_{s}"] = turns
        month = when.strftime("%B %Y")
        first_user = turns[0]["dia_id"]
        if s % 2:
            q = rng.choice(MONTH_Q).format(month=month)
        else:
            q = rng.choice(DATE_Q).format(date=when.strftime("%-d %B %Y"))
        qa.append({"question": q, "answer": subject["name"], "evidence": [first_user],
                   "category": 2})
    for name, ids in where.items():
        spec = SLOTS[name]
        qa.append({"question": spec["now"], "answer": slots[name][-1 if name in updated else 0],
                   "evidence": [ids[-1]], "category": 4})
        if len(ids) > 1:
            qa.append({"question": spec["was"], "answer": " -> ".join(slots[name]),
                       "evidence": ids, "category": 1})
    return {"sample_id": f"longchat-{idx + 1}", "conversation": conv, "qa": qa}


Facts = tuple[dict[str, list[str]], dict[str, int], dict[str, int]]


def _session(rng: random.Random, s: int, subject: dict[str, Any],
             details: list[tuple[str, str]], facts: Facts,
             where: dict[str, list[str]], qa: list[dict[str, Any]]) -> list[dict[str, str]]:
    """One session's turns: the user's request, answers, follow-ups; the user's facts
    stated or changed where they fall; a question per planted detail."""
    turns: list[dict[str, str]] = []

    def add(speaker: str, text: str) -> str:
        dia = f"D{s}:{len(turns) + 1}"
        turns.append({"speaker": speaker, "dia_id": dia, "text": text})
        return dia

    slots, said_in, changed_in = facts
    add("User", rng.choice(subject["ask"]))
    for k, (sentence, question) in enumerate(details):
        dia = add("Assistant", _answer(rng, subject, sentence))
        qa.append({"question": question, "answer": sentence, "evidence": [dia], "category": 3})
        for name in sorted(SLOTS):
            spec = SLOTS[name]
            if said_in[name] == s and k == 0:
                where[name] = [add("User", rng.choice(spec["say"]).format(v=slots[name][0]))]
                add("Assistant", _answer(rng, subject, None))
            elif changed_in.get(name) == s and k == len(details) - 1:
                text = rng.choice(spec["change"]).format(old=slots[name][0], v=slots[name][1])
                where[name].append(add("User", text))
                add("Assistant", "Thanks for letting me know, I'll keep that in mind. "
                    + _answer(rng, subject, None))
        add("User", rng.choice(["That helps, thanks. One more thing about it.",
                                "Great, and what else should I watch out for?",
                                "Okay. Could you go into more detail?"]))
    add("Assistant", _answer(rng, subject, None))
    return turns


def generate(seed: int = 31, conversations: int = CONVERSATIONS) -> list[dict[str, Any]]:
    """The data set (same ``seed``, same bytes)."""
    rng = random.Random(seed)
    return [_conversation(rng, i) for i in range(conversations)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--seed", type=int, default=31)
    a = ap.parse_args(argv)
    data = generate(a.seed)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(data, indent=1) + "\n")
    turns = sum(len(v) for c in data for k, v in c["conversation"].items()
                if k.startswith("session_") and isinstance(v, list))
    print(f"{a.out}: {len(data)} conversations, {turns} turns, "
          f"{sum(len(c['qa']) for c in data)} questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
