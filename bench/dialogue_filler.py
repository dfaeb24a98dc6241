"""The everyday text of bench/recall_dialogue.py: friends' chat messages and
an assistant's long answers, composed from templates with slots.

Two friends talk about work, family, food, weekends and the rest; a user asks
an assistant for help with meals, money, travel, sleep and so on, and gets
150 to 400 words of advice back. Slots ({dish}, {veg}, {person}) are filled
from word lists, so a template seldom comes out twice the same, and the
vocabulary is large enough that neither word matching nor sentence vectors
find an old fact by its rare words alone.

What filler must never say: the values facts are drawn from (names, cities,
jobs, instruments...: recall_dialogue.check refuses a conversation whose
last fifth holds an answer), and no dates (no month names, no day numbers),
so only a fact can answer a date question.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

# --- slots ------------------------------------------------------------------------
# A slot named with a trailing digit ({veg2}) takes another value of the same list.

SLOTS: dict[str, list[str]] = {
    "person": [
        "Sam", "Alex", "Jo", "Chris", "Robin", "Kim", "Charlie", "Frankie", "Jess", "Danny", "Lou", "Mo",
        "Hattie", "Gus", "Nell", "Reggie",
    ],
    "relative": ["mum", "dad", "aunt", "uncle", "grandad", "nan", "cousin", "brother", "sister", "godmother"],
    "when": [
        "yesterday", "last night", "this morning", "last weekend", "the other day", "two days ago",
        "on Saturday", "last week", "on Sunday", "after work on Friday",
    ],
    "dish": [
        "lasagne", "chickpea curry", "shakshuka", "risotto", "ramen", "fish pie", "stuffed peppers", "paella",
        "dumplings", "chilli", "moussaka", "pad thai", "minestrone", "tacos", "gnocchi", "a proper roast",
    ],
    "snack": [
        "cinnamon buns", "flapjacks", "banana bread", "scones", "brownies", "oat cookies", "lemon drizzle",
    ],
    "show": [
        "that crime series set on the islands", "the baking competition", "the new space series",
        "a documentary about octopuses", "the quiz show with the grumpy host", "that period drama",
        "a nature series about deserts", "the courtroom drama everyone is talking about",
        "an old sitcom from the nineties", "the dating show my flatmate loves",
    ],
    "book": [
        "a thriller set on a night ferry", "a memoir by a mountain rescuer", "a fantasy trilogy",
        "a history of salt", "a novel about two sisters running a seaside hotel", "a book about sleep",
        "a collection of ghost stories", "a biography of a chess champion", "a cosy mystery in a bookshop",
    ],
    "weather": ["pouring rain", "freezing fog", "howling wind", "sticky heat", "drizzle", "sleet"],
    "place": [
        "the park", "the market", "the lake", "the old quarry", "the botanical garden", "the beach",
        "the woods behind the school", "the high street", "the river path", "the castle ruins",
    ],
    "outing": [
        "a long walk", "a picnic", "a bike ride", "a swim", "a car boot sale", "a barbecue", "a boat trip",
        "a flea market", "an ice cream", "a kickabout",
    ],
    "clutter": [
        "the garage", "the loft", "the shed", "the cupboard under the stairs", "the wardrobe", "the cellar",
    ],
    "crop": [
        "tomatoes", "courgettes", "sunflowers", "runner beans", "strawberries", "sweet peas", "potatoes",
        "dahlias", "chillies", "raspberries",
    ],
    "task": [
        "the quarterly report", "a client presentation", "the budget review", "the office move",
        "a training day", "the new booking system", "an audit", "the year-end accounts", "a product launch",
    ],
    "game": ["chess", "a card game", "darts", "a jigsaw", "bowling", "mini golf", "a murder mystery game"],
    "sound": [
        "an old jazz record", "a folk playlist", "the radio", "a podcast about space", "an audiobook",
        "eighties pop", "film soundtracks", "a true-crime podcast",
    ],
    "exercise": [
        "a run", "a yoga class", "a swim", "a spin class", "a hike", "a long bike ride", "a gym session",
    ],
    "shop": [
        "the hardware shop", "the bakery", "the garden centre", "the charity shop", "the farmers' market",
        "the bookshop", "the big supermarket", "the furniture place out of town",
    ],
    "body": ["back", "knee", "shoulder", "neck", "ankle", "wrist", "hip"],
    "mood": ["exhausted", "wired", "a bit flat", "really content", "restless", "pretty good", "oddly calm"],
    "kids": [
        "a school play", "parents' evening", "a sleepover", "a birthday party", "a science fair",
        "sports day",
    ],
    # the assistant's topics
    "grain": ["rice", "couscous", "quinoa", "orzo", "bulgur wheat", "pearl barley", "noodles", "farro"],
    "veg": [
        "broccoli", "spinach", "carrots", "peppers", "courgettes", "kale", "cauliflower", "butternut squash",
        "green beans", "leeks", "sweet potatoes", "cabbage", "red onions", "beetroot", "peas",
    ],
    "protein": [
        "chicken thighs", "chickpeas", "eggs", "salmon", "tofu", "black beans", "pork mince", "white fish",
        "halloumi", "turkey mince",
    ],
    "herb": ["parsley", "dill", "basil", "thyme", "mint", "chives", "oregano", "rosemary"],
    "count": ["two", "three", "four"],
    "minutes": ["ten", "fifteen", "twenty", "twenty-five", "thirty"],
    "expense": [
        "subscriptions", "takeaways", "coffee on the go", "taxis", "impulse buys online", "gym fees",
        "bank charges", "phone contracts",
    ],
    "goal": ["an emergency fund", "a holiday", "a deposit for a flat", "a new bike", "a wedding", "a course"],
    "sight": [
        "the old town", "the covered market", "the harbour", "the cathedral", "the city walls",
        "the botanical gardens", "the modern art museum", "the viewpoint above the river",
    ],
    "gear": [
        "a light rain jacket", "a refillable water bottle", "a spare phone charger", "blister plasters",
        "a small first-aid kit", "a head torch", "a warm hat", "sunscreen", "a packable down layer",
    ],
    "room": [
        "the kitchen", "the hallway", "the spare room", "the bathroom", "the bedroom", "the living room",
    ],
    "houseplant": [
        "pothos", "snake plant", "peace lily", "spider plant", "rubber plant", "monstera", "fern",
        "string of pearls",
    ],
    "flower": ["lavender", "marigolds", "nasturtiums", "geraniums", "cosmos", "petunias", "salvia"],
    "device": ["laptop", "phone", "tablet", "router", "printer", "smart speaker"],
    "skill": [
        "project management", "public speaking", "data analysis", "negotiation", "writing reports",
        "coaching junior staff", "budget planning",
    ],
    "drink": ["herbal tea", "warm milk", "a glass of water", "decaf coffee", "hot chocolate"],
    "guest_dish": [
        "a slow-roasted shoulder of lamb", "a big tray of baked pasta", "a whole roast chicken",
        "a fish stew", "a spiced rice dish", "a tart with a green salad",
    ],
    "shot": ["portraits", "landscapes", "street scenes", "food", "architecture", "wildlife", "night skies"],
    "genre": [
        "crime fiction", "short stories", "essays", "poetry", "science fiction", "travel writing", "history",
    ],
}

FIELD = re.compile(r"\{(\w+)\}")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z{])")


def fill(rng: random.Random, template: str, known: dict[str, str], *, capital: bool = True) -> str:
    """``template`` with its slots filled; ``known`` keeps the values chosen
    so far (and the speakers' names), so one exchange talks about one dish."""

    def value(match: re.Match[str]) -> str:
        name = match[1]
        if name not in known:
            base = name.rstrip("0123456789")
            taken = {v for k, v in known.items() if k.rstrip("0123456789") == base}
            known[name] = rng.choice([v for v in SLOTS[base] if v not in taken])
        return known[name]

    text = FIELD.sub(value, template)
    return text[0].upper() + text[1:] if capital else text


def lower_first(text: str) -> str:
    """A sentence's start made to follow on from another ("Anyway, we're..."), "I" kept."""
    first = text.split(" ", 1)[0]
    return text if first == "I" or first.startswith("I'") else text[:1].lower() + text[1:]


def capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def sentences(text: str) -> list[str]:
    """The sentences of a block written one to a line (a long one running on, indented)."""
    return SENTENCE_END.split(" ".join(text.split()))


# --- two friends chatting -----------------------------------------------------------
# {me} is the one writing, {you} the other.


@dataclass(frozen=True, slots=True)
class ChatTopic:
    news: list[str]  # something that happened or is going on
    replies: list[str]  # a reaction to the other's news on this topic
    asks: list[str]  # a question to the other


CHAT: dict[str, ChatTopic] = {
    "work": ChatTopic(
        [
            "We've got a new intern who is far more organised than any of us.",
            "The coffee machine at work broke and productivity went through the floor.",
            "I spent the whole of {when} in spreadsheets, my eyes are square.",
            "Work has been chaos, we spent the whole afternoon {when} on {task}.",
            "My manager dropped {task} on my desk at five o'clock, so that was my evening gone.",
            "I finally finished {task} and nobody even said thanks.",
            "We had a team lunch {when} and for once nobody talked about deadlines.",
            "{person} from accounts brought in {snack}, which made the whole meeting bearable.",
            "I'm trying to leave the office on time this week and it's going badly.",
            "The printer on our floor has been broken for three weeks and someone drew a sad face on it.",
            "I volunteered to organise the office quiz and I already regret it a little.",
            "There's a rumour that we're all getting new laptops, I'll believe it when I see it.",
            "I had to present {task} to the directors and my voice went all wobbly halfway through.",
            "Half the team is off sick, so I'm doing three jobs and getting paid for one.",
        ],
        [
            "Ugh, last-minute stuff is the worst.",
            "That sounds exhausting, I hope you got some rest after.",
            "Honestly, people forget how much a simple thank you matters.",
            "My office is the same, everyone is stretched thin at the moment.",
            "Ha, the broken printer is a universal experience.",
            "Leaving on time is a skill, you'll get there.",
            "I bet you did better than you think, nobody notices the wobbly bits.",
        ],
        [
            "Is work calming down at all?",
            "How's the big project going?",
            "Are you still doing the early shifts?",
            "Is your boss still sending emails at midnight?",
        ],
    ),
    "family": ChatTopic(
        [
            "My {relative} has taken up online chess and beats me every single time.",
            "The little ones built a blanket fort in the living room and refused to leave it.",
            "My {relative} is redecorating and keeps sending me photos of paint samples that all look alike.",
            "The kids had {kids} {when} and I cried a bit, not going to lie.",
            "My {relative} came round for dinner and stayed until midnight telling old stories.",
            "I spent the morning on the phone with my {relative}, who has discovered online shopping.",
            "We're trying to get the little ones to bed earlier and it's a battle every single night.",
            "My {relative} is turning seventy soon and we're planning something low-key.",
            "Sunday lunch at my {relative}'s was lovely, even the roast potatoes were perfect.",
            "My {relative} sent me an eleven-minute voice message, mostly about the neighbours.",
            "We dug out the old family photo albums and laughed until we cried at the haircuts.",
        ],
        [
            "That's so sweet, those moments go by so fast.",
            "Family dinners like that are the best kind of chaos.",
            "Bedtime battles, I remember those well.",
            "Your {relative} sounds like a real character.",
            "Eleven minutes, that's dedication.",
            "Old photos are the best, you have to show me next time.",
        ],
        [
            "How's everyone at home?",
            "Are your parents still thinking of downsizing?",
            "Did the kids enjoy it?",
            "Is your {relative} feeling better now?",
        ],
    ),
    "cooking": ChatTopic(
        [
            "I finally cracked a decent {dish}, the secret was loads more garlic.",
            "We've started a rule that whoever cooks doesn't wash up, and it's working surprisingly well.",
            "I bought a bag of spices at the market and now I have no idea what half of them are for.",
            "I made {dish} {when} and it actually turned out well for once.",
            "Tried a new recipe for {dish}, far too much chilli, but we ate it all anyway.",
            "I've been baking {snack} every weekend, it's becoming a problem.",
            "We had friends over and I served {dish}, which I'd never made before.",
            "Our oven has started to run hot, so everything comes out a bit crispy.",
            "I bought a cast-iron pan and now I'm a bit scared of it.",
            "I attempted homemade pasta and the kitchen looked like a snowstorm afterwards.",
        ],
        [
            "That sounds delicious, I'm jealous.",
            "{dish} is one of my favourites, you'll have to send me the recipe.",
            "Ha, too much chilli is better than too little.",
            "I keep meaning to cook more from scratch.",
            "Crispy is a flavour, I've decided.",
        ],
        [
            "What are you cooking this week?",
            "Have you tried that new place on the corner yet?",
            "Still doing the Sunday batch cooking?",
        ],
    ),
    "garden": ChatTopic(
        [
            "The {crop} are finally coming up, I check on them every morning.",
            "Slugs ate half my {crop} overnight, I was furious.",
            "I spent {when} digging a new bed and my {body} is paying for it.",
            "The garden centre had a sale, so obviously I came home with far too many pots.",
            "We put up a bird feeder and the neighbour's cat now sits under it all day.",
            "The hedge has gone wild, it's eating the path.",
            "I grew so many {crop} that I'm leaving bags of them on people's doorsteps.",
        ],
        [
            "Slugs are the enemy, I've tried everything.",
            "Nothing beats picking your own {crop}.",
            "Gardening is the best therapy, even with a sore back.",
            "I'd happily take some of those off your hands.",
        ],
        [
            "How's the garden looking?", "Did anything survive the frost?",
            "Are you still doing the veg patch?",
        ],
    ),
    "screen": ChatTopic(
        [
            "We started a new series and I'm already three episodes ahead of everyone else in the house.",
            "There's a documentary about deep-sea fish that genuinely gave me nightmares.",
            "We binged {show} {when} and now I can't stop thinking about the ending.",
            "I fell asleep twenty minutes into a film, which seems to be my new tradition.",
            "Finally started {show}, everyone at work kept spoiling it.",
            "We went to the cinema for the first time in ages, the popcorn cost more than the tickets.",
            "I rewatched a film from when we were teenagers and it's much worse than I remembered.",
        ],
        [
            "I've heard so much about that one, no spoilers please!",
            "Falling asleep during films is a sign of a good sofa.",
            "I love a proper cinema trip, even with the prices.",
            "Some things are better left in our memories, honestly.",
        ],
        ["Watched anything good lately?", "Any recommendations for a rainy evening?"],
    ),
    "books": ChatTopic(
        [
            "I'm halfway through {book} and I can't put it down.",
            "Our book club picked {book} and I'm the only one who finished it.",
            "I've been listening to audiobooks on the commute, it has changed my mornings.",
            "I gave up on {book} after fifty pages, life's too short.",
            "The library near us reopened and I came home with six books I'll never finish.",
        ],
        [
            "Ooh, that sounds right up my street.",
            "Book clubs always have one person who actually reads the book, and it's you.",
            "Giving up on a book is allowed, I do it all the time.",
            "Libraries are the best thing ever invented.",
        ],
        ["What are you reading at the moment?", "Got any book recommendations for me?"],
    ),
    "weather": ChatTopic(
        [
            "We had {weather} all day {when}, so I didn't leave the house.",
            "The {weather} ruined our plans for {outing}, so we played cards instead.",
            "It was so nice out that we went for {outing} at {place}.",
            "The {weather} has been relentless here, the washing hasn't dried in days.",
        ],
        [
            "Same here, the weather has been all over the place.",
            "Cards on a grim day sounds perfect to be honest.",
            "Ugh, damp washing is the worst smell.",
        ],
        ["What's the weather doing over there?", "Did you get that storm too?"],
    ),
    "outings": ChatTopic(
        [
            "We discovered a little cafe by {place} that does the best hot chocolate I've ever had.",
            "We went to a pottery-painting place for a birthday and my mug looks like a toddler made it.",
            "We went to {place} {when} for {outing}, it was packed.",
            "Dragged everyone out for {outing} and, miraculously, nobody complained.",
            "There was a street festival near us with live music and far too many food stalls.",
            "We tried {game} with the neighbours and it got surprisingly competitive.",
            "We finally walked all the way round {place}, took us three hours with the snack stops.",
            "I signed us up for {outing} next weekend, nobody knows yet.",
        ],
        [
            "That sounds like a perfect day out.",
            "{game} always gets competitive, that's the fun of it.",
            "Snack stops are the whole point of a walk.",
            "Love it, surprise plans are the best plans.",
        ],
        [
            "Any plans for the weekend?",
            "Are you around next weekend? We should meet up.",
            "Have you been to {place} lately?",
        ],
    ),
    "health": ChatTopic(
        [
            "I've booked a massage for my {body} and I'm counting the days.",
            "I've been doing ten minutes of stretching every morning and I feel ten years younger, mostly.",
            "I went for {exercise} {when} and my {body} is complaining today.",
            "I've been sleeping terribly, I keep waking up at four.",
            "The physio gave me exercises for my {body}, which I do about half the time.",
            "I'm trying to drink more water and less coffee, day three and I'm grumpy.",
            "I've started walking to work and I feel {mood} all day now.",
            "I had a cold all week and spent most of it under a blanket feeling sorry for myself.",
        ],
        [
            "Take it easy on that {body}!",
            "Sleep is everything, I hope it settles down.",
            "Cutting coffee is brave, respect.",
            "Walking to work is such a good idea, I'm jealous of your route.",
            "Colds are miserable, I hope you're through the worst of it.",
        ],
        ["How's your {body} doing?", "Are you still going to that class?", "Sleeping any better?"],
    ),
    "home": ChatTopic(
        [
            "We finally cleared out {clutter} and found a box of photos from school.",
            "I painted the hallway {when} and there's more paint on me than on the walls.",
            "The washing machine flooded the kitchen, so that was a fun morning.",
            "We've been arguing about what colour to paint the bedroom for a month.",
            "The boiler made a noise like a dragon and then stopped working altogether.",
            "I put up some shelves and only one of them is wonky.",
        ],
        [
            "Clearing out is so satisfying once it's done.",
            "Old photos are the best find, you have to send me some.",
            "Oh no, a flood is the last thing you need.",
            "One wonky shelf out of several is a win in my book.",
            "Call someone about that boiler before it gets cold!",
        ],
        ["How's the house stuff going?", "Did you ever sort out the leaky window?"],
    ),
    "animals": ChatTopic(
        [
            "The neighbour's dog escaped again and ended up asleep in our kitchen.",
            "My parents' cat has learned to open the treat cupboard.",
            "A fox has been digging up the lawn every night, we can hear it screaming.",
            "We looked after my {relative}'s dog for the weekend and now I want one.",
        ],
        [
            "Animals are such little criminals.",
            "Foxes sound terrifying at night, it's like a horror film.",
            "Dogs are the best, but think of the early walks!",
        ],
        ["Are you still thinking about getting a dog?"],
    ),
    "money": ChatTopic(
        [
            "I went into {shop} for one thing and came out with a bag full of stuff.",
            "Our energy bill arrived and I had to sit down.",
            "I'm trying a no-spend month, which is going fine apart from {shop}.",
            "Found a perfectly good armchair at {shop} for almost nothing.",
            "We cancelled three streaming services and nobody has noticed yet.",
        ],
        [
            "I do exactly the same, it's a talent.",
            "Bills are brutal at the moment.",
            "That's a proper bargain, well done.",
            "Ha, the true test of whether you need them.",
        ],
        ["Managed to save anything this month?"],
    ),
    "music": ChatTopic(
        [
            "I've had {sound} on repeat all week.",
            "We went to a gig at the old theatre and my ears are still ringing.",
            "My neighbour has started practising the drums, every evening, for hours.",
            "I dug out my old guitar and I've forgotten every chord I ever knew.",
        ],
        [
            "I'll have to check that out.",
            "Drums through the wall, that's a test of any friendship.",
            "It'll come back quicker than you think.",
        ],
        ["Been to any gigs lately?", "What are you listening to these days?"],
    ),
    "friends": ChatTopic(
        [
            "{person} is having a housewarming on Saturday and I have no idea what to bring.",
            "I bumped into {person} from school at {shop}, we chatted for an hour.",
            "{person} and I finally had that catch-up, it felt like no time had passed.",
            "{person} is getting married and has asked me to give a speech, help.",
            "We had a games night at {person}'s and it went on until two in the morning.",
        ],
        [
            "It's always lovely when that happens.",
            "A plant or a nice bottle is always safe for a housewarming.",
            "You'll smash the speech, just keep it short and tell one good story.",
            "Two in the morning, you party animals.",
        ],
        ["Have you heard from {person} lately?", "Are you going to {person}'s thing?"],
    ),
    "tech": ChatTopic(
        [
            "My phone screen cracked {when}, it's like looking through a spider's web.",
            "I spent an hour on hold with the internet company and they fixed nothing.",
            "I finally set up the smart speaker and now it answers when nobody's talking to it.",
            "I deleted all the social media apps from my phone for a week, it was weirdly peaceful.",
        ],
        [
            "Customer service queues are a special kind of torture.",
            "Ha, they're always listening.",
            "A week off social media sounds amazing, I should try that.",
        ],
        ["Did you get your phone fixed?"],
    ),
    "trips": ChatTopic(
        [
            "We drove out to the coast {when} and ate chips on the sea wall in the wind.",
            "I'm dreaming of a holiday somewhere hot where nobody can email me.",
            "The train home took four hours because of a broken signal somewhere.",
            "We spent a night in a tiny cabin in the woods with no signal, it was bliss.",
        ],
        [
            "Chips by the sea, the best kind of day.",
            "Trains, honestly, what a saga.",
            "A cabin with no signal sounds like heaven.",
        ],
        ["Have you booked anything for the summer?", "Any trips planned?"],
    ),
    "neighbours": ChatTopic(
        [
            "The new neighbours have been drilling every evening for a week, I know every beat of it by now.",
            "Our street had a party {when}, someone brought a karaoke machine and it went downhill.",
            "The old man across the road waves at me every morning from his window, it makes my day.",
            "Someone keeps parking across our drive, and my polite notes are getting less polite.",
            "The neighbours gave us a huge bag of {crop} from their garden, I have no idea what to do.",
        ],
        [
            "Drilling at night should be illegal.",
            "Street parties are the best, karaoke and all.",
            "That's so lovely, small things like that really matter.",
            "Passive-aggressive notes are an art form.",
        ],
        ["How are your neighbours these days?", "Is the building work next door finished yet?"],
    ),
    "school_days": ChatTopic(
        [
            "I found my old school report in a box and apparently I talked too much even then.",
            "Someone set up a reunion group for our year and it's chaos, everyone has posted baby photos.",
            "I drove past our old school {when}, they've knocked down the science block.",
            "I still dream about sitting exams I haven't revised for, is that normal?",
        ],
        [
            "Ha, some things never change.",
            "Reunion group chats are a special kind of madness.",
            "Everyone has the exam dream, it never goes away.",
        ],
        ["Do you still keep in touch with anyone from school?"],
    ),
    "commute": ChatTopic(
        [
            "My bus was cancelled twice this week, so I've started cycling in.",
            "The roadworks on the ring road have doubled my commute, I listen to {sound} to stay sane.",
            "I got the early train {when} and it was so quiet, I actually read a whole chapter.",
            "Someone on the train was eating a whole roast dinner out of a tub, the smell was incredible.",
        ],
        [
            "Cycling in sounds brave, good for you.",
            "Roadworks are the worst, they seem to last forever.",
            "The quiet early train is underrated.",
            "Honestly, respect to that person.",
        ],
        ["How's the commute these days?"],
    ),
    "eating_out": ChatTopic(
        [
            "We tried the new noodle bar in town {when}, the queue was ridiculous but worth it.",
            "I went for brunch with {person} and we stayed so long they started setting tables for dinner.",
            "The pizza place round the corner has closed, I'm genuinely in mourning.",
            "We got a takeaway {when} and they forgot half the order, so dinner was mostly rice.",
        ],
        [
            "Worth the queue is the best kind of review.",
            "Long brunches are the best brunches.",
            "Noooo, not the pizza place!",
            "Mostly rice is still a dinner, technically.",
        ],
        ["Been anywhere good to eat lately?", "Do you fancy trying that new place together?"],
    ),
    "volunteering": ChatTopic(
        [
            "I did a shift at the food bank {when}, it was busier than ever.",
            "We helped clear litter along {place} with the community group, we filled twenty bags.",
            "I've started reading with kids at the primary school once a week, they correct my accent.",
            "The charity shop asked if I could help sort donations on Saturdays, I said yes before thinking.",
        ],
        [
            "That's such a good thing to do.",
            "Twenty bags, that's amazing and also horrifying.",
            "Kids are brutally honest, I love it.",
        ],
        ["Are you still helping out at the food bank?"],
    ),
    "crafts": ChatTopic(
        [
            "I'm knitting a scarf and it's getting wider at one end for reasons I can't explain.",
            "I made a birthday card for my {relative} and it's covered in glitter, as is the whole flat.",
            "I've started sketching in the park at lunchtime, mostly pigeons.",
            "I tried making candles and the kitchen smells like a very confused forest.",
        ],
        [
            "A wonky scarf is still a scarf.",
            "Glitter is forever, you'll be finding it for years.",
            "Pigeons are great models, they don't complain.",
        ],
        ["Are you still doing your crafts?", "Made anything lately?"],
    ),
    "sport_on_tv": ChatTopic(
        [
            "We watched the football at {person}'s and I've never heard so much shouting.",
            "The tennis was on all afternoon and I got absolutely nothing done.",
            "I've got really into watching the cycling, it's oddly relaxing, all those fields.",
        ],
        [
            "Ha, football brings out the worst in everyone.",
            "Tennis on a lazy afternoon is perfect.",
            "The cycling is so soothing, I agree.",
        ],
        ["Did you watch the match?"],
    ),
    "memories": ChatTopic(
        [
            "I found a photo of us at that festival years ago, the one where the tent flooded.",
            "Do you remember the night we got lost walking back from {person}'s and ended up at a farm?",
            "I made that soup you taught me years ago and it took me right back.",
        ],
        [
            "Oh my goodness, the flooded tent! I still have nightmares.",
            "How could I forget, that cow was terrifying.",
            "I'm so glad you still make it.",
        ],
        ["Do you remember that summer?"],
    ),
}

REACTIONS = [
    "Ha!", "Oh wow.", "Oh, that's so good to hear.", "Well, that's one way to spend a day.", "Amazing.",
    "I'm laughing so hard, {you}.", "That's rough, I'm sorry.", "Wait, what?", "Oh I love this.",
    "You always have the best stories, {you}.", "Sounds about right.", "Ugh, typical.", "Hooray!",
    "No way, {you}!", "That's brilliant, {you}.", "Oh {you}, that sounds like a lot.",
    "Love that.", "Aw, that's lovely.", "Oof.", "Honestly, same.", "I can totally picture it.",
    "You're kidding!", "That is so you, {you}.", "Oh no!", "Good for you!", "Classic.",
]
CHAT_ASKS = [
    "Are you free for a coffee sometime next week?", "How's the family?", "Any news on your side?",
    "Did you end up going?", "How did the weekend go?", "Are you keeping well?",
    "What's new with you, {you}?",
    "Have you got anything nice planned?", "Did you get my voice note?", "How's everything at work?",
    "Still on for the walk we talked about?", "What are you up to this evening?",
    "What about you, {you}?", "How are things with you?", "What have you been up to?",
    "Anything new your end?", "How was your week, {you}?", "Tell me everything.",
]
GREETINGS = [
    "Hey {you}! Long time no chat.", "Hi {you}, how's your week been?",
    "{you}! I've been meaning to message you for days.", "Morning {you}! Got a minute?",
    "Hey {you}, sorry I went quiet, it's been a mad couple of weeks.", "Hi {you}! Guess what.",
    "Evening {you}! Finally sat down with a cup of tea.",
]
GREETING_REPLIES = [
    "Hi {you}! Great to hear from you.", "Hey {you}! I was just thinking about you.",
    "{you}! Yes, I've got time, what's new?", "Hey! All good here, {you}, mostly.",
    "Oh hi {you}! Perfect timing, I'm on my lunch break.",
]
FAREWELLS = [
    "Anyway, I'd better go, talk soon {you}!", "Right, dinner's burning. Speak soon!",
    "I need to get going, but let's catch up properly soon.", "Off to bed, night {you}!",
]
FAREWELL_REPLIES = ["Bye {you}, take care!", "Talk soon!", "Night night!", "Speak soon {you}, love to all."]


def chat_topic(rng: random.Random) -> str:
    return rng.choice(sorted(CHAT))


def chat_message(
    rng: random.Random,
    me: str,
    you: str,
    topic: str,
    known: dict[str, str],
    used: set[str],
    *,
    replying: bool,
    greeting: bool = False,
    farewell: bool = False,
    insert: str = "",
) -> str:
    """One friend's message: news (or, ``replying``, a reaction to the other's
    news and some of one's own), perhaps a question back. ``insert`` is
    a planted sentence, put among the others rather than first or last.
    ``known`` carries the exchange's slot values, so a reply speaks of the
    dish the message named; ``used``, its templates, so a reply does not
    repeat the message."""
    bank = CHAT[topic]
    names = {"me": me, "you": you}
    own = dict(names)  # one's own news takes fresh values

    def say(template: str, values: dict[str, str]) -> str:
        values.update(names)
        return fill(rng, template, values)

    def pick(options: list[str], count: int = 1) -> list[str]:
        fresh = [o for o in options if o not in used]
        chosen = rng.sample(fresh, min(count, len(fresh)))
        used.update(chosen)
        return chosen

    said = []
    if greeting:
        said.append(say(rng.choice(GREETING_REPLIES if replying else GREETINGS), {}))
    if replying:  # mostly a reaction to what the message said, else a general one
        on_topic = [t for t in bank.replies if set(FIELD.findall(t)) <= known.keys()]
        said += [say(t, known) for t in pick(on_topic if on_topic and rng.random() < 0.7 else REACTIONS)]
    news = pick(bank.news, rng.randint(0 if replying else 1, 2))
    said += [say(template, own if replying else known) for template in news]
    if rng.random() < 0.5 or (replying and not news) or (insert and len(said) < 2):
        said += [say(t, known) for t in pick(bank.asks + CHAT_ASKS)]
    if insert:  # after the first sentence, before the last
        said.insert(rng.randint(1, len(said) - 1) if len(said) > 1 else 1, insert)
    if farewell:
        said.append(say(rng.choice(FAREWELL_REPLIES if replying else FAREWELLS), {}))
    return " ".join(said)


# --- a user and an assistant -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AdviceTopic:
    requests: list[tuple[str, str]]  # (what is going on, without a full stop; the question, lower case)
    advice: list[str]  # sentences of an answer


ADVICE: dict[str, AdviceTopic] = {
    "meals": AdviceTopic(
        [
            ("I've got {veg} and {veg2} left in the fridge", "what could I make with them tonight?"),
            ("My partner and I both work late on weekdays", "how can we stop relying on takeaways?"),
            ("I'm planning meals for the week", "can you suggest a few dinners that reheat well?"),
            ("I keep buying vegetables that go off before I use them", "how do I plan my shopping better?"),
            ("We're cooking for four on a tight budget", "what cheap dinners still feel generous?"),
            ("I want to take lunch to work instead of buying it", "what could I prepare on a Sunday?"),
            ("My evenings are packed at the moment", "what can I get on the table in under half an hour?"),
        ],
        sentences(
            """
            On a busy weekday, {dish} with a side of {veg} is on the table in about {minutes} minutes.
            A simple plan might be {dish} one night, leftovers the next, then {dish2} at the weekend.
            Roast a tray of {veg} and {veg2} while you cook something else, and you have a base for two more
                meals.
            If you like {dish}, a version with {protein} instead of the usual filling is a good change.
            A jar of pesto made with {herb} keeps for a week and turns plain {grain} into lunch.
            Use the oven once for several things: bake {protein} and roast {veg} on the shelf below at the
                same time.
            A {grain} bowl with roasted {veg} and a sharp dressing keeps for {count} days and tastes better on
                the second.
            Cook a big pot of {grain} at the weekend and use it in different ways: fried with eggs, in a
                salad, or under a stew.
            Write the week's dinners on a sheet on the fridge, so nobody has to decide at six o'clock when
                everyone is hungry.
            Plan one leftovers night a week; it stops food going to waste and gives you an evening off.
            Shop with a list ordered by the layout of the shop; it sounds fussy, but it cuts impulse buys.
            Frozen {veg} is frozen within hours of picking, so it is often as nutritious as fresh and never
                wilts in the drawer.
            A traybake is the easiest weeknight dinner: {protein}, {veg} and {veg2} on one tray, forty minutes
                in a hot oven.
            Soups and stews freeze well in single portions, which makes a busy evening much less stressful.
            Keep a few store-cupboard staples on hand, such as tinned tomatoes, {grain}, stock cubes and dried
                {herb}.
            If the {veg} is going soft, blend it into a sauce or a soup rather than throwing it away.
            Double the recipe when you cook something that freezes well, and label the spare portion clearly.
            A squeeze of lemon and a handful of fresh {herb} lift a reheated dish more than extra salt does.
            Buying {protein} in bulk and portioning it before freezing usually saves money over the weeks.
            Repeat ingredients across meals: the same bunch of {herb} can go into a salad one day and a sauce
                the next.
            For lunches, a sturdy salad of {grain}, beans and {veg} survives the commute without going soggy.
            Cook the {grain} slightly under, because it will soften further when you reheat it.
            Breakfast is the easiest meal to prepare ahead: overnight oats or baked egg muffins take {minutes}
                minutes.
            Keep one very quick fallback dinner in the freezer for the nights when plans fall apart.
            Letting everyone at home choose one meal each makes the plan far easier to stick to.
            In a slow cooker, {protein} with onions, garlic and a tin of tomatoes becomes dinner while you are
                out.
            Stir-fries are forgiving: almost any mix of {veg}, {protein} and a simple soy and ginger sauce
                works.
            Check what is already in the fridge before you write the list; building meals around it wastes
                least.
            """
        ),
    ),
    "money": AdviceTopic(
        [
            ("We're trying to save for {goal} but nothing seems to stick", "what would you change first?"),
            ("Our bank balance is always low by the end of the month", "where do we start with a budget?"),
            ("I want to put money aside for {goal}", "how much should I save each month, and where?"),
            ("I've got a couple of small debts hanging around", "should I pay those off before saving?"),
            ("My spending on {expense} has crept up", "how do I rein it in without feeling miserable?"),
        ],
        sentences(
            """
            If {expense} take a fixed slice each month, cancelling one of them could cover a good part of
                {goal}.
            Try a week of writing down every small purchase, from {expense} to snacks, then decide what to
                cut.
            A shared spreadsheet with columns for rent, bills, food, transport and fun keeps a household on
                the same page.
            Put {goal} on the first line of the budget, not the last, so it is paid before the fun money.
            Some banks let you round up every card payment into a savings pot, a painless way to start.
            Start by tracking every purchase for {count} weeks; most people find a surprise or two in
                {expense}.
            Split your income into needs, wants and savings, and check the proportions against what you
                actually spend.
            An automatic transfer on payday means saving happens before you have a chance to spend the money.
            Keep {goal} in a separate account, ideally one without a card, so it is not mixed up with daily
                spending.
            Debts with the highest interest rate usually deserve to be paid first, while you pay the minimum
                on the rest.
            A small emergency fund, even one month of essential costs, stops a broken boiler from becoming new
                debt.
            Go through your bank statement for recurring payments; forgotten {expense} add up quietly.
            Give yourself a modest amount of guilt-free spending money, because budgets that allow no treats
                rarely last.
            Compare your energy, insurance and phone deals once a year; loyalty is seldom rewarded.
            Round numbers are easier to live with: a weekly cash amount for food and fun is simpler than
                tracking every coin.
            If you share costs with someone, agree which bills come from a joint pot and which stay personal.
            Wait a day before any non-essential purchase over a set amount; many urges fade by the next
                morning.
            Write down what {goal} will cost and by when, then divide it into monthly steps you can see
                progress on.
            Cashback and loyalty schemes help only if they reward things you would have bought anyway.
            Review the budget together once a month rather than arguing about individual purchases as they
                happen.
            Selling things you no longer use is a quick way to give savings a head start.
            Interest on savings varies a lot between accounts, so it is worth checking what your current one
                pays.
            Meal planning is one of the most reliable ways to lower a food bill, because it cuts waste and
                takeaways.
            Keep the plan visible, a note on your phone or a sheet on the wall, so it becomes part of the
                week.
            Expect the first month to be messy; the numbers get more realistic once you have a baseline.
            """
        ),
    ),
    "running": AdviceTopic(
        [
            ("I keep picking up small injuries when I run", "what am I likely doing wrong?"),
            ("I've started running again after a long break", "how do I build up without getting injured?"),
            ("My runs all feel the same and I've stopped improving", "how should I vary my training?"),
            ("I get a stitch every time I run", "is there anything I can do about it?"),
            ("I'd like to run a ten kilometre race this year", "what would a sensible plan look like?"),
        ],
        sentences(
            """
            A simple week could be two easy runs of {minutes} minutes, one run with short hills, and a longer
                slow run.
            If your {body} aches after runs, cut the distance for a week and see whether it settles.
            Running on grass or trails now and then is kinder to the joints than pavement every day.
            A run-walk approach, running for a few minutes and walking for one, is a respectable way to build
                distance.
            Cadence matters: slightly shorter, quicker steps usually reduce the pounding on your {body}.
            Increase your weekly distance gradually, by roughly a tenth each week, so your joints can keep up
                with your lungs.
            Most runs should be at an easy, conversational pace; it feels too slow at first, but it builds the
                base.
            Once a week, add some short faster efforts with plenty of recovery in between.
            A stitch often comes from starting too fast or eating too close to a run, so give a meal a couple
                of hours.
            Warm up with {minutes} minutes of brisk walking or very easy jogging before anything quicker.
            Strength work for the hips, calves and core twice a week reduces the risk of the usual running
                injuries.
            Rest days are when the body adapts, so treat them as part of the plan rather than a failure.
            Good shoes matter more than any gadget; a specialist shop can watch you run and suggest a fit.
            If a pain changes the way you run, stop and rest it rather than pushing through.
            A long slow run at the weekend builds endurance more than anything else in the week.
            Running with a group or a friend makes early mornings and bad weather much easier to face.
            Hills are strength training in disguise: short uphill repeats make flat running feel easier.
            Keep a simple log of distance, time and how you felt, so you can see progress over the weeks.
            Breathing in a steady rhythm with your steps can help if you tend to get breathless early.
            In the final week before a race, run less rather than more, so you arrive fresh.
            Stretching gently after a run, especially the calves and hamstrings, helps you feel less stiff the
                next day.
            Vary your routes; new scenery keeps running interesting and changes the load on your legs.
            Drink regularly through the day rather than a lot just before you set off.
            Plan your runs into the week like appointments, or they get squeezed out by everything else.
            Progress rarely comes in a straight line, so judge it over a month rather than a single run.
            """
        ),
    ),
    "sleep": AdviceTopic(
        [
            ("My partner goes to bed much later than I do", "how do we stop disturbing each other?"),
            ("I keep waking up at four and can't get back to sleep", "what can I try?"),
            ("It takes me ages to fall asleep on work nights", "are there any habits that actually help?"),
            ("I'm tired all the time even though I'm in bed for eight hours", "what might be going on?"),
        ],
        sentences(
            """
            If your {body} aches at night, a better pillow or mattress topper can make more difference than
                any routine.
            A white-noise app or a fan helps when a partner or a street keeps you awake.
            Reading {genre} in dim light is a better wind-down than a bright screen.
            Keep a notebook by the bed for the thoughts that arrive as soon as the light goes off.
            Separate duvets are an old trick in many countries, and they stop one person's restlessness waking
                the other.
            Going to bed and getting up at the same time every day, weekends included, steadies your body
                clock.
            Keep the bedroom cool, dark and quiet; a cheap eye mask and earplugs make a surprising difference.
            Caffeine lingers for hours, so try keeping coffee and tea to the morning for a couple of weeks.
            If you have been awake for a while, get up and read somewhere dim until you feel sleepy again.
            Screens are less of a problem than what is on them; stressful emails at night keep the mind busy.
            A wind-down routine of {minutes} minutes, the same every night, tells your body that sleep is
                coming.
            Daylight in the morning, even a short walk, helps you feel sleepy at the right time in the
                evening.
            A warm shower an hour before bed helps, because the drop in body temperature afterwards is
                calming.
            Writing tomorrow's worries on a notepad before bed can stop them circling at four in the morning.
            Alcohol may help you drop off, but it tends to break up sleep in the second half of the night.
            Heavy meals late in the evening can disturb sleep, so try eating a little earlier.
            A cup of {drink} can be part of a calming routine, as long as it does not keep you getting up at
                night.
            Long naps in the afternoon make falling asleep harder, so keep them short and early.
            If snoring or gasping is part of the picture, it is worth talking to a doctor.
            Regular exercise improves sleep quality, though a hard workout right before bed can do the
                opposite.
            Avoid checking the clock during the night; knowing the time tends to make the worry worse.
            Breathing slowly, with a longer out-breath than in-breath, is a simple way to settle a racing
                mind.
            Give any change at least two weeks, because sleep habits take time to shift.
            Keep the bed for sleep, so your mind links it with rest rather than work or scrolling.
            """
        ),
    ),
    "city_break": AdviceTopic(
        [
            ("We've got three days and a small budget", "how do we make the most of a trip on the cheap?"),
            ("We've booked a long weekend in a city we don't know", "how do we plan without overdoing it?"),
            ("I'm travelling alone for the first time", "any tips for staying safe and still having fun?"),
            ("We always come home from trips more tired than we left", "how do we pace a holiday better?"),
        ],
        sentences(
            """
            A rough plan might be {sight} on the first morning, a long lunch, then {sight2} when the light is
                golden.
            Picnic lunches from a market save money and are often the best food of the trip.
            Free walking tours run in most cities; you tip what you think the guide was worth.
            Stay near a good tram or metro line rather than in the most famous district, which costs twice as
                much.
            Check whether {sight} has a free evening or a cheaper ticket late in the day.
            Pick one or two things you really want to see each day, such as {sight}, and leave the rest open.
            Stay somewhere central, even if the room is smaller; you will save hours of travelling back and
                forth.
            Book the popular sights ahead online to skip the queues, especially places like {sight}.
            Walk or take a local bus on the first day, because it gives you a feel for the layout of the
                place.
            Eat where locals eat: a few streets away from the main square, prices drop and food gets better.
            Pack {gear} and {gear2}; both are small and save the day more often than you would think.
            Keep a copy of your passport and bookings on your phone and another in your bag.
            Plan a slow morning in the middle of the trip; a lazy breakfast can be the best memory of all.
            Markets and parks are free, lively and a good way to see everyday life.
            Check the opening days of museums; many close on one weekday and it is easy to be caught out.
            A city card can be good value if you plan to visit several museums and use public transport a lot.
            Travelling alone, share your plans with someone at home and arrange a quick daily check-in.
            Trust your instincts about a street or a situation, and do not worry about seeming rude when you
                leave.
            Join a walking tour early in the trip; guides are full of tips you will not find in a guidebook.
            Carry a little local cash for small cafes and markets, even in places where cards are common.
            Build in time to do nothing in particular, sitting in a square and watching people is part of
                travel.
            Learn a few words of greeting and thanks; people respond warmly even to a clumsy attempt.
            Wear shoes you have already walked in; a new pair on a walking holiday is a recipe for blisters.
            Look at the weather a few days before you leave and pack layers rather than one heavy coat.
            Go to the viewpoints early or late in the day, when the light is softer and the crowds thinner.
            """
        ),
    ),
    "hiking": AdviceTopic(
        [
            ("I'm going on a walking weekend with friends who are much fitter than me", "how do I prepare?"),
            ("I'd like to get into hill walking", "what do I need to start with?"),
            ("We're planning a day hike with the kids", "how long a route is realistic?"),
            ("My new walking boots are giving me blisters", "how do I break them in?"),
        ],
        sentences(
            """
            A first day of about {count} hours with a pub or a cafe at the end is a good way to test your
                legs.
            Carry {gear} even on a sunny morning; weather in the hills can turn within the hour.
            On steep ground, shorter steps save energy and your {body} will thank you on the descent.
            Practise with a loaded pack on local walks, so the weight on the day is not a surprise.
            Agree a turnaround time with the group before you set off, and stick to it.
            Start with well-marked routes of a few hours, and build up distance and climbing gradually.
            Check the forecast for the hills, not just the town below, because conditions change quickly with
                height.
            Always carry {gear}, {gear2} and enough food for an unexpected delay.
            Tell someone where you are going and when you expect to be back.
            Break in new boots on short walks around home before trusting them on a long day.
            Good socks matter as much as boots; merino or synthetic pairs keep feet drier than cotton.
            Plan to walk at the pace of the slowest person, and take a short break every hour.
            A paper map and the skill to read it are still worth having when a phone battery dies.
            Walking poles take strain off the knees on long descents.
            Turning back is part of hill walking, not a failure; the hill will still be there another day.
            Start early, so you have daylight to spare if the route takes longer than planned.
            Eat little and often rather than one big lunch, which keeps your energy steady.
            Layers are better than one thick jacket: you can add or remove them as you warm up and cool down.
            For children, a route with a goal, such as a waterfall, a summit cairn or a picnic spot, keeps
                them going.
            Guesthouses along long-distance routes can carry your luggage from one stop to the next for a
                small fee.
            Waymarked long-distance trails are a good first multi-day trip, because navigation stays simple.
            Book accommodation for the busy season well ahead; small villages fill up quickly.
            Keep your pack light: every extra item is carried up every climb.
            Treat hot spots on your feet as soon as you feel them, before they turn into blisters.
            Stretch your calves and thighs gently in the evening after a long walk.
            """
        ),
    ),
    "decluttering": AdviceTopic(
        [
            ("We're moving into a smaller place soon", "how do we decide what to keep?"),
            ("Our flat is drowning in stuff", "where do we even begin with decluttering?"),
            ("I want to tidy {room} but I don't know where to start", "can you give me a plan?"),
            ("Every surface in the house gets covered in paperwork", "how do I keep it under control?"),
        ],
        sentences(
            """
            Do {room} in one session and the rest of the flat in short bursts over the following weeks.
            Keep one memory box per person; whatever fits in it stays, and the rest can be photographed.
            Clothes you have not worn for a full year of seasons can usually go.
            Kitchen gadgets are a common trap; keep the ones you used in the last month and box the rest for a
                trial.
            A bag by the front door for donations makes letting go of things part of everyday life.
            Start with one small area, a drawer or a shelf, so you see results within {minutes} minutes.
            Sort things into keep, donate, recycle and bin, and take the donations out of the house the same
                day.
            Tackle {room} first if it is the one you see most; the boost carries you through the rest.
            Ask of each item whether you have used it in the past year and whether you would buy it again.
            Sentimental things are the hardest, so leave them until last, when your deciding muscles are
                warmed up.
            Give every category of item one home; clutter builds up where things have nowhere to live.
            A one in, one out rule stops the problem from coming back.
            Deal with paperwork in one place: an in-tray, a weekly sort, and a folder for anything you must
                keep.
            Open post standing next to the recycling bin, so envelopes and flyers never reach the table.
            Clear surfaces make a room feel tidy even when cupboards are full, so start with the tops of
                things.
            Set a timer and stop when it rings; short regular sessions beat one exhausting weekend.
            Duplicates are easy wins: most kitchens hold several of the same utensil.
            Take photos of things you want to remember but not keep, such as children's artwork.
            Storage boxes help only after you have cut down, otherwise they just hide the problem.
            Agree the rules with everyone at home, so nobody feels their things are being thrown out behind
                their back.
            A basket at the bottom of the stairs collects things that belong upstairs, ready for one trip.
            Five minutes of resetting the living room every evening keeps the whole flat calmer.
            Charity shops and local swap groups give unwanted things a second life, which makes letting go
                easier.
            Measure the space before buying any shelving, and allow room for things you have not bought yet.
            """
        ),
    ),
    "balcony": AdviceTopic(
        [
            ("I'd love some green in {room} but there's not much light", "which plants would cope?"),
            ("I've got a small balcony that gets sun in the afternoon", "what could I grow there?"),
            ("My houseplants keep dying", "what am I doing wrong?"),
            ("I want more flowers in the garden for bees", "what should I plant?"),
        ],
        sentences(
            """
            In {room}, a {houseplant} near the brightest window usually does best.
            Try a pot of {herb} on the windowsill; you will use it in cooking and it smells lovely.
            A mix of {flower} and {flower2} gives colour from early summer well into the autumn.
            Self-watering pots are worth it if you travel a lot or tend to forget.
            Climbers such as sweet jasmine or clematis make a small balcony feel like a garden.
            Herbs such as {herb} and {herb2} do well in pots and like a sunny, sheltered spot.
            Most houseplants die from too much water rather than too little, so let the top of the soil dry
                out first.
            A {houseplant} is very forgiving and copes with less light than most plants.
            Pots need drainage holes; standing water at the roots rots them quickly.
            Bees love open, simple flowers such as {flower} and {flower2}, which let them reach the nectar
                easily.
            Group pots together, which keeps the air around them a little more humid.
            Feed container plants every couple of weeks in the growing season, because pots run out of
                nutrients.
            Turn houseplants a quarter turn each week, so they grow evenly instead of leaning towards the
                window.
            Cherry tomatoes and salad leaves grow well in containers on a sunny balcony.
            Wind dries pots out quickly on a balcony, so check the soil more often on breezy days.
            Yellow leaves usually mean overwatering, and crispy brown edges too little water or dry air.
            Choose plants for the light you have, not the light you wish you had.
            A layer of gravel or bark on top of the soil keeps moisture in and looks tidy.
            Plant in groups of three or five of the same kind; it looks fuller and helps pollinators find
                them.
            Cut off faded flowers regularly and many plants will keep flowering for weeks longer.
            Repot a plant when roots poke out of the bottom, moving up just one pot size.
            Rainwater is better than tap water for many plants, so a small water butt is worth it.
            Leave a corner a little wild, with some dead stems over winter, for insects to shelter in.
            Check the weight limit of a balcony before adding large pots of wet soil.
            """
        ),
    ),
    "interview": AdviceTopic(
        [
            ("I have to give a short presentation at my interview", "how do I keep it under ten minutes?"),
            ("I have a job interview next week", "how should I prepare?"),
            ("I'm going for a promotion and must show my experience in {skill}", "how do I sell myself?"),
            ("I always freeze when interviewers ask about my weaknesses", "what's a good way to answer?"),
        ],
        sentences(
            """
            Have an example ready for {skill}, one for teamwork and one for a time something went wrong.
            Keep a presentation to three points, with one story for each and a clear ending.
            Time yourself and aim to finish a minute early, since nerves make people speak for longer.
            If they ask about {skill}, describe a real project, what you did and what you learned.
            It helps to bring a printed copy of your slides in case the screen does not work.
            Read the job description line by line and prepare one example from your experience for each
                requirement.
            Use a simple structure for examples: the situation, what you did, and what changed as a result.
            Prepare a short answer to tell me about yourself, two minutes at most, ending with why you want
                this role.
            For weaknesses, pick a real but manageable one, such as {skill}, and explain what you are doing to
                improve it.
            Research the organisation's recent news so you can ask an informed question at the end.
            Practise out loud, ideally with a friend; answers sound very different spoken than in your head.
            Numbers make examples memorable: time saved, money saved, customers helped or errors reduced.
            Plan your journey, or test your video call set-up, the day before, so nothing distracts you on the
                day.
            It is fine to pause and think before answering; a short silence sounds confident, not lost.
            Bring two or three questions of your own, about the team, the first months or how success is
                measured.
            Talk about what you did rather than what the team did; interviewers want to know your part.
            If you do not know an answer, say how you would find out; that is often what they want to hear.
            Send a brief thank-you note afterwards, mentioning something specific from the conversation.
            Dress one step smarter than the everyday dress code of the workplace.
            For a promotion, show that you already do parts of the bigger role, with concrete examples.
            Keep a running list of achievements through the year, so you are not digging for examples at the
                last minute.
            Prepare for salary questions by knowing the usual range for the role and your own minimum.
            A good night's sleep before the interview does more than late-night cramming.
            Treat the interview as a conversation: you are also deciding whether the place suits you.
            """
        ),
    ),
    "focus": AdviceTopic(
        [
            ("I've got three big deadlines in the same week", "how do I stop panicking and plan it?"),
            ("My to-do list never gets shorter", "how do I prioritise better?"),
            ("I get interrupted constantly at work", "how can I protect time for focused work?"),
            ("I procrastinate on anything that feels big", "any tricks for getting started?"),
        ],
        sentences(
            """
            Try a block of {minutes} minutes on the hardest deadline first thing, before anything else can
                interrupt.
            Write each deadline on its own card, list the next three actions, and work the cards one by one.
            Tell people early if a deadline is at risk; a warning a week ahead is far better than an apology
                on the day.
            Plan the week on paper, with the immovable meetings first and focus blocks in the gaps.
            Pick the three tasks that matter most each morning, and do at least one before opening email.
            Break a big task into a first step so small that it feels almost silly, then start with just that.
            Block focus time in your calendar like a meeting, and treat it as seriously as one.
            Work in blocks of {minutes} minutes with short breaks; a timer makes starting easier.
            Turn off notifications during focus blocks; most messages can wait an hour.
            Write down interruptions that pop into your head on a notepad instead of acting on them at once.
            Sort the list by urgency and importance; important but not urgent tasks are the ones that slip.
            Agree quiet hours with your team, so focus time is a shared habit rather than a personal battle.
            Batch small tasks such as emails and calls into one or two slots a day.
            End each day by choosing tomorrow's first task, so the morning starts without deciding.
            Some tasks can be dropped or delegated rather than done; the list does not have to be sacred.
            Procrastination is often about a feeling, such as fear of doing it badly, not about laziness.
            Do the hardest task at the time of day when your energy is highest.
            Keep a done list as well as a to-do list; seeing progress is motivating.
            A tidy desk and a closed browser tab or two remove a lot of small temptations.
            Say no, or not yet, to new requests when your week is already full.
            Review the week on a Friday afternoon: what got done, what slipped, and why.
            Give yourself a small reward after finishing a dreaded task, even just a walk or a coffee.
            Working next to someone else who is focused, in person or on a call, helps many people start.
            """
        ),
    ),
    "studying": AdviceTopic(
        [
            ("I'm revising for a certificate in {skill}", "how should I structure my evenings?"),
            ("I'm learning a new language in the evenings", "how do I make the vocabulary stick?"),
            ("I've got exams coming up", "what's the most effective way to revise?"),
            ("I started an online course but keep falling behind", "how do I stay on track?"),
        ],
        sentences(
            """
            An evening might be {minutes} minutes of review, a short break, then practice questions on
                {skill}.
            Colour-coding notes by topic makes it easier to see which areas you have not revised.
            A study group once a week keeps you honest and shows you the gaps in your understanding.
            Record yourself explaining a topic and listen back on your commute.
            Short daily practice of {minutes} minutes beats one long session at the weekend.
            Spaced repetition, reviewing words just before you would forget them, is the most efficient way to
                remember.
            Test yourself instead of rereading; trying to recall something strengthens memory far more.
            Learn words in phrases and sentences rather than alone, because context makes them easier to use.
            Speak from the first week, even badly; conversation partners online are easy to find.
            Mix topics when revising rather than doing one for hours, which feels harder but works better.
            Teach what you learned to someone else, or explain it out loud to an empty room.
            Set a fixed time and place for study, so it becomes a habit rather than a decision.
            Put your phone in another room during study sessions.
            Past papers show what examiners ask and how; do them under timed conditions.
            Sleep consolidates what you learned during the day, so late-night cramming often backfires.
            Listen to podcasts or radio in the language while cooking or commuting.
            Keep a small notebook of words you wanted to say but did not know.
            Plan revision backwards from the exam date, leaving the last days for review rather than new
                material.
            Online courses are easier to finish with a study buddy or a group that checks in weekly.
            Watch series you already know with subtitles in the language you are learning.
            Make mistakes on purpose, in the sense of trying sentences you are unsure of; that is how you
                learn.
            Reward streaks, but do not abandon the habit when a streak breaks; just start again the next day.
            Use flashcards both ways, from your language into the new one and back again.
            Summarise each chapter on one page in your own words.
            """
        ),
    ),
    "teenager": AdviceTopic(
        [
            ("My daughter wants to go to a festival with friends", "how do I decide whether to let her?"),
            ("My teenager barely talks to me these days", "how can I reconnect without pushing?"),
            ("We argue every evening about screen time", "how do other families handle it?"),
            ("My son wants more independence", "how much freedom is reasonable at fifteen?"),
        ],
        sentences(
            """
            Ask what the plan is, who is going and how they will get home, and listen before deciding.
            A first festival with a trusted adult nearby can be a good middle step.
            Agree check-in times by message rather than constant calls, which feel like surveillance.
            Talking about what to do if things go wrong is more useful than a list of rules.
            Side-by-side time, in the car, cooking or walking the dog, often works better than face-to-face
                talks.
            Listen more than you advise; teenagers open up when they do not expect a lecture.
            Agree screen rules together and write them down, so they are not renegotiated every evening.
            Phones out of bedrooms at night is a common rule, because it protects sleep more than anything
                else.
            Offer freedom in steps, linked to trust shown: a later curfew after a few weeks of keeping the
                current one.
            Be curious about what they enjoy online, rather than dismissing it; it opens conversations.
            Pick your battles: safety and kindness matter more than the state of the bedroom floor.
            Stay calm when they test limits; a cool response keeps the discussion about the rule, not the row.
            Regular family meals, even a few a week, give everyone a natural time to talk.
            Admit your own mistakes; it shows that getting things wrong is part of growing up.
            Let them solve small problems themselves, even when you could do it faster.
            Know their friends' names and their parents where you can; it makes agreements easier.
            A predictable weekly plan reduces arguments about who does which chore.
            Late evenings are often when teenagers want to talk, so be available even when you are tired.
            Praise effort and specific things they did, not just results.
            Give them a say in family decisions, such as where to go on holiday.
            Consequences work best when they are agreed in advance and linked to the rule broken.
            Model the screen habits you want to see; they notice when adults are glued to their phones.
            Remember that pulling away is a normal step towards independence, not a rejection.
            """
        ),
    ),
    "emails": AdviceTopic(
        [
            ("I need to chase a client who hasn't paid an invoice", "how do I word the reminder?"),
            ("I need to write a difficult email to a colleague", "how do I keep it polite but firm?"),
            ("My emails are always too long", "how do I make them clearer?"),
            ("I have to ask my manager for a day off at short notice", "how should I word it?"),
        ],
        sentences(
            """
            A reminder can be short: the invoice number, the amount, the original due date and a friendly
                request.
            Offer to resend the invoice or answer questions; sometimes it is simply lost.
            Send follow-ups at a steady rhythm, becoming a little firmer each time, and keep a record.
            If a colleague keeps missing {task}, ask whether something is getting in the way before
                escalating.
            Put the main point or request in the first two lines, and the background after it.
            Use a subject line that says what you need, and by when.
            Keep sentences short and use a new paragraph for each separate point.
            Describe the effect of the problem rather than the person's character; it keeps things from
                escalating.
            Suggest a next step or a solution, so the email moves things forward.
            Read it aloud before sending; awkward or harsh phrases jump out when spoken.
            If you are annoyed, write the draft, save it, and send it only after a break.
            Bullet points help when you have several questions, so none of them gets missed.
            Thank the person for something specific, which sets a cooperative tone.
            Check who really needs to be copied in; fewer names keep it from feeling like a public complaint.
            For a request at short notice, say what you have arranged to cover your work.
            End with a clear question the reader can answer quickly.
            Avoid sarcasm and irony in writing; they are easily misread.
            Cut words such as just, actually and sorry unless they add meaning.
            A phone call or short chat is sometimes kinder than an email for sensitive topics.
            Keep a few templates for messages you send often, and adapt them each time.
            Answer the question asked before adding anything else.
            If an email needs more than three paragraphs, consider whether a meeting would be quicker.
            Stay factual about dates, numbers and decisions, and link to the documents rather than pasting
                them in.
            """
        ),
    ),
    "moving": AdviceTopic(
        [
            ("We're moving in with my partner's parents for a few months", "how do we keep the peace?"),
            ("We're moving flat in a few weeks", "what should we do first?"),
            ("I'm dreading packing up the whole house", "is there a sensible order?"),
            ("We've just moved and nothing feels like home yet", "how do we settle in?"),
        ],
        sentences(
            """
            Pack {room} last, as it is the one you will need until the final day.
            Agree house rules early: cooking, cleaning, noise and shared costs cause most tension.
            Keep one space that is yours, even a corner, so everyone has somewhere to retreat.
            Schedule a short weekly check-in to sort small problems before they grow.
            Make a checklist with the weeks counted down, from booking a van to redirecting the post.
            Pack the rooms you use least first, and leave the kitchen and bathroom until the very end.
            Label each box with its room and a few words about what is inside, on the side as well as the top.
            Keep an essentials box with the kettle, mugs, toilet roll, chargers, {gear} and a change of
                clothes.
            Declutter before packing; every item you give away is one you do not carry.
            Photograph the meter readings on the day you leave and the day you arrive.
            Tell the bank, the doctor, your employer and the council about the new address in the first week.
            Book movers or a van early, because weekends and the end of the month are busiest.
            Unpack the beds first; a good night's sleep on the first night makes everything else easier.
            Take a walk around the new neighbourhood in the first days to find the shops, parks and bus stops.
            Introduce yourself to the neighbours; a friendly face nearby helps a place feel like home.
            Hang a few pictures early, even before every box is empty; it changes the feel of a room.
            Measure doorways and the big furniture before moving day, so nothing gets stuck on the stairs.
            Keep valuables and important documents with you rather than in the van.
            Plan simple meals for the first few days, or pick a takeaway to celebrate the move.
            Give children a job on moving day and let them set up their own room first.
            Check the smoke alarms and find the stopcock and fuse box as soon as you arrive.
            Expect it to take a few months before a new place feels fully yours.
            Change the locks if you do not know how many keys are around.
            """
        ),
    ),
    "hosting": AdviceTopic(
        [
            ("I'm making Sunday lunch for the in-laws for the first time", "how do I avoid a disaster?"),
            ("We're having eight people round for dinner", "how do I avoid being stuck in the kitchen?"),
            ("I'm hosting a birthday party at home", "how do I keep it relaxed?"),
            ("Some of our guests have different dietary needs", "how do I plan one menu for everyone?"),
        ],
        sentences(
            """
            A menu could be {guest_dish}, a big salad with {veg} and something sweet you made the day before.
            Write a timeline on a sticky note by the oven, with the time each dish goes in and comes out.
            Do a practice run of the main dish a week before if you are nervous about it.
            Warm the plates; it is a small touch that makes a big difference to hot food.
            Choose a main course that cooks itself, such as {guest_dish}, so you can spend time with your
                guests.
            Do as much as possible the day before: dessert, sauces, chopping and laying the table.
            Serve a simple starter that needs no last-minute work, like bread, dips and something pickled.
            Ask guests about allergies and dietary needs when you invite them, not on the day.
            Build the menu around dishes that are naturally free of common allergens, then add extras on the
                side.
            Let people help if they offer; giving someone a small job makes them feel at home.
            Write a rough timeline working back from when you want to eat.
            Make sure there is something non-alcoholic and interesting to drink.
            Clear the dishwasher and empty the bins before guests arrive.
            Good lighting and background music do more for the atmosphere than fancy food.
            Set out snacks when people arrive, so nobody is hungry while you finish the main course.
            Cook something you have made before; a party is not the moment to try a new recipe.
            A big salad with {veg} and {herb} adds colour and balances a rich main course.
            Dessert can be simple: good ice cream, fruit and something crunchy is always welcome.
            Plan where coats and bags will go, and where people will sit.
            For a birthday, one simple activity or a playlist the guest of honour loves is enough.
            Keep the table plan loose, but seat quieter guests next to people who will draw them out.
            Leave the washing up until the morning; your guests came to see you.
            Label dishes on the table if they contain common allergens.
            """
        ),
    ),
    "computer": AdviceTopic(
        [
            ("My {device} keeps dropping the wifi connection", "what can I try before calling someone?"),
            ("My {device} has become really slow", "what should I check first?"),
            ("I keep losing photos when phones get replaced", "how should I back them up?"),
            ("I'm worried about my accounts being hacked", "what are the basics I should do?"),
        ],
        sentences(
            """
            Restart the {device} and the router, and move them closer together to rule out a weak signal.
            Forget the network on the {device} and join it again with the password.
            Thick walls and microwaves interfere with wifi, so the router's position in the house matters.
            A mesh system helps in larger homes where one router cannot reach every room.
            Check how full the storage is; most devices slow down badly when nearly full.
            Look at which programs start automatically and switch off the ones you do not need.
            Install system updates promptly, because they fix security holes and often performance problems.
            Restarting the {device} once in a while clears out memory that has built up.
            Keep at least two copies of your photos, one of them somewhere other than your home.
            A cloud backup that runs automatically is better than a hard drive you always forget to plug in.
            Use a password manager, so every account gets a long, unique password.
            Turn on two-step verification for email first, since email resets every other account.
            Be suspicious of messages that create urgency, such as an account about to be closed.
            Uninstall apps you no longer use; they take space and may keep running in the background.
            A factory reset is a last resort, but it can make an old {device} feel new again after a backup.
            Check that backups actually work by restoring a single file now and then.
            Browser extensions can slow things down and collect data, so remove any you do not recognise.
            Old batteries degrade; if the {device} dies quickly, a battery replacement can be cheaper than a
                new one.
            Keep the router updated and change its default admin password.
            Sort photos by year into folders, so backups are easier to check.
            Write down recovery codes for important accounts and keep them somewhere safe at home.
            Public wifi is fine for browsing, but avoid banking on it without a trusted connection.
            If the {device} gets hot, check the vents for dust and keep it on a hard surface.
            """
        ),
    ),
    "stress": AdviceTopic(
        [
            ("Everything at work feels urgent at the moment", "how do I stay calm?"),
            ("I've been feeling overwhelmed lately", "how do I stop everything piling up in my head?"),
            ("I find it hard to switch off after work", "what helps people unwind?"),
            ("I snap at people when I'm stressed", "how can I notice it sooner?"),
        ],
        sentences(
            """
            A short walk at lunchtime, away from screens, clears the head better than you would expect.
            Try box breathing: in for four counts, hold for four, out for four, hold for four.
            Talk to your manager about priorities when everything is marked urgent; not everything can be.
            A hobby with your hands, such as cooking {dish}, quietens a busy mind.
            Write everything on your mind onto one list; seeing it on paper often makes it feel smaller.
            A short walk outside, even ten minutes, lowers stress more reliably than scrolling.
            A clear end to the working day, such as changing clothes or a short walk, helps the mind switch
                off.
            Notice the early signs of stress in your body, such as a tight jaw or shallow breathing.
            Slow breathing for a couple of minutes, with long out-breaths, calms the body quickly.
            Talk to someone you trust; saying a worry out loud takes away some of its weight.
            Cut back on one commitment if you can; a fuller diary is not always a better life.
            Regular meals and enough sleep make stress much easier to handle.
            Schedule something you enjoy each week and protect it like an appointment.
            When you feel irritation rising, pause before replying, even for a few breaths.
            Apologise briefly when you snap; it repairs things and lowers the tension for both of you.
            Limit news and social media if they leave you anxious.
            Exercise of any kind helps, and the best type is the one you will actually do.
            Break worries into those you can act on and those you cannot, and plan a first step for the first
                kind.
            Creative hobbies such as drawing, music or cooking absorb attention in a restful way.
            If the feeling of being overwhelmed lasts for weeks, it is worth talking to a doctor.
            Be as kind to yourself as you would be to a friend in the same situation.
            A few minutes of quiet at the start of the day sets a calmer tone than checking messages in bed.
            Notice what went well each evening, even small things; it balances the mind's focus on problems.
            """
        ),
    ),
    "car_care": AdviceTopic(
        [
            ("We're driving to the mountains for a week", "what should I pack in the car?"),
            ("My car is making a squeaking noise when I brake", "should I be worried?"),
            ("I'm about to drive a long way for the first time in years", "what should I check beforehand?"),
            ("Our car costs a fortune to run", "how can we bring the costs down?"),
        ],
        sentences(
            """
            Pack {gear}, a torch, jump leads and a phone charger before any long trip.
            Check the spare tyre and the jack; many people find out too late that one is missing.
            Snow chains or winter tyres may be required on mountain roads, so check the rules for the region.
            Keep the fuel tank above a quarter on mountain roads, where stations can be far apart.
            Squeaking brakes often mean worn pads, so have them checked soon rather than waiting.
            Check the tyre pressures when the tyres are cold, and look at the tread depth too.
            Top up the screenwash and check the oil level on flat ground before a long trip.
            Plan breaks every two hours on long drives, because tiredness creeps up unnoticed.
            Smooth driving, with gentle acceleration and braking, saves a surprising amount of fuel.
            Take unnecessary weight and roof boxes off the car; both increase fuel use.
            Shop around for insurance each year instead of accepting the renewal price.
            Regular servicing costs less than the repairs that neglect leads to.
            Keep {gear}, a blanket and some water in the boot in case of a breakdown.
            Warning lights on the dashboard are worth looking up straight away in the handbook.
            Correct tyre pressure improves grip and fuel economy and makes tyres last longer.
            Local independent garages are often cheaper than dealers for routine work.
            Combine short errands into one trip, since a cold engine uses the most fuel.
            Check the lights and wipers regularly; they are cheap to fix and important for safety.
            If you drive little, car clubs or hiring for occasional trips can be cheaper than owning.
            Park in the shade in hot weather and keep the battery in mind in cold spells.
            Write down the mileage at each fill-up to notice changes in fuel use early.
            Listen to new noises; describing when they happen helps a mechanic find the cause faster.
            Cleaning the car inside now and then makes it nicer to drive and helps its value.
            """
        ),
    ),
    "photos": AdviceTopic(
        [
            ("I'd like to print some of my photos for the wall", "how do I choose and print them well?"),
            ("I just bought my first proper camera", "how do I stop using the automatic mode?"),
            ("My phone photos of {shot} always look flat", "how can I make them better?"),
            ("I'd like to take better photos on holiday", "any simple rules to follow?"),
        ],
        sentences(
            """
            For {shot}, try shooting at the golden hour, just after sunrise or before sunset.
            Pick a theme for a wall, such as {shot} or one trip, so the prints feel like a set.
            Print a few small test copies first, since colours on screen and paper often differ.
            Matt paper suits {shot} and reflects less light from windows.
            Light matters most: early morning and late afternoon give soft, warm light that flatters almost
                everything.
            Try aperture priority first; you choose how much is in focus and the camera handles the rest.
            Move closer; most photos improve when the subject fills more of the frame.
            Put the subject slightly off centre, where the lines of a grid would cross.
            For {shot}, look for a clean background, because clutter behind the subject distracts the eye.
            Hold the camera steady by tucking your elbows in, or rest it on a wall.
            Take several shots and pick the best later; professionals throw most of theirs away.
            Shoot from a different height, crouching low or finding a higher spot, for a fresh view.
            Turn off the flash in most situations and use window light instead.
            Edit lightly: a little more contrast and a straight horizon go a long way.
            Look at the edges of the frame before pressing the shutter, not just the middle.
            People look more natural when they are doing something rather than posing.
            In bright midday sun, look for open shade to avoid harsh shadows on faces.
            Clean the lens; a greasy phone lens explains many hazy photos.
            Study photos you like and try to work out where the light was coming from.
            Back up your photos after each trip, before the memory card fills up.
            A simple weekly challenge, such as one colour or one subject, trains your eye.
            Leading lines such as roads, rivers and railings draw the eye into the picture.
            Patience pays off with {shot}; wait for the moment rather than shooting straight away.
            """
        ),
    ),
    "reading": AdviceTopic(
        [
            ("I want to read more but I fall asleep after two pages", "any tips?"),
            ("I used to read all the time but I've lost the habit", "how do I get back into it?"),
            ("I want to read more {genre}", "where should someone start?"),
            ("Our book club is running out of ideas", "how do we choose books everyone enjoys?"),
        ],
        sentences(
            """
            For {genre}, a short collection is an easy way in before committing to a long book.
            Read earlier in the evening, or in the morning with coffee, rather than in bed when you are
                already sleepy.
            Try a book club built around {genre}; a deadline and people to talk to keep you going.
            Mix in an audiobook of {genre} for walks and housework.
            Read ten pages before bed each night; small amounts add up to a book a fortnight.
            Keep a book in your bag, so waiting rooms and queues become reading time.
            Give yourself permission to abandon books you are not enjoying.
            Start {genre} with a well-loved anthology, which shows you many writers at once.
            Audiobooks count, and they fit commutes, walks and housework.
            Swap recommendations with friends whose taste you trust.
            Libraries let you try books without spending money, and librarians give excellent suggestions.
            Set a loose goal, such as one book a month, rather than an ambitious number that becomes a chore.
            Alternate long, demanding books with shorter, lighter ones.
            For a book club, rotate who chooses and keep a shared list of ideas throughout the year.
            Pick books of different lengths for the club, since long ones are hard in busy months.
            Discussion is livelier with books that divide opinion than with ones everyone likes.
            Put your phone in another room for your reading time.
            Reading in the morning, before the day gets busy, works well for some people.
            Keep a short note of what you read and one line about each book.
            Short stories suit tired evenings, because you can finish one in a single sitting.
            Reread an old favourite to remind yourself why you loved reading.
            Follow a few writers or bookshops online for a steady stream of ideas.
            A comfortable chair and good light make reading a treat rather than a task.
            """
        ),
    ),
}

GENERAL_ADVICE = [
    "Small, regular steps usually work better than one big push.",
    "Try one change at a time, so you can tell what actually helps.",
    "Write the plan down; it is easier to follow what you can see.",
    "Expect a few setbacks, and treat them as information rather than failure.",
    "Whatever you choose, make it easy to start and hard to forget.",
    "It often helps to talk it through with someone who has done it before.",
    "Set a reminder to look back after a few weeks and see what worked.",
    "Keep it realistic for your week as it really is, not the ideal week.",
    "Good enough and done beats perfect and postponed.",
    "Your own circumstances matter more than any general rule, so adapt freely.",
    "The first attempt is mostly about learning what the real obstacles are.",
    "Noticing what you already do well is a good place to build from.",
    "Consistency matters more than intensity over the long run.",
    "It is worth asking the people around you what would make things easier for them too.",
    "A little preparation the evening before saves a lot of stress the next morning.",
]
OPENERS = [
    "Good question, and a very common one.", "Happy to help with that.",
    "That's a great thing to plan ahead for.",
    "Here's how I would approach it.", "Let's break it down into manageable pieces.",
    "There are a few reliable ways to handle this.",
    "Thanks for the detail, it helps me give better suggestions.",
    "You're not alone in this; lots of people run into the same thing.", "Sure, here are some ideas.",
    "That sounds like a lot to juggle, so let's keep it practical.", "Great question.",
    "Absolutely, this is very doable.", "It's worth getting this right, so here's a fuller answer.",
    "There's no single right way, but some approaches work better than others.",
    "I can help with that.", "This comes up a lot, and the good news is that small changes help.",
]
LIST_LEADS = [
    "A few things that usually help:", "Here's a simple plan:", "Some ideas to start with:",
    "Here are the main points:", "What I'd suggest:",
]
CLOSINGS = [
    "If you tell me more about your week, I can tailor this further.",
    "Would you like me to turn this into a short checklist?",
    "Start with one or two of these rather than all at once.",
    "Let me know how it goes, and we can adjust from there.",
    "I hope that helps, and good luck with it.",
    "Happy to go into more detail on any of these.",
    "Pick whichever of these fits your situation best and ignore the rest.",
    "Tell me which of these sounds most doable and we can plan it in more detail.",
    "If something here doesn't suit you, say so and I'll suggest alternatives.",
    "Come back after a week or two and tell me what worked.",
    "Good luck, and don't aim for perfect straight away.",
    "I can also put this into a simple weekly plan if that helps.",
    "Feel free to share more details and I'll refine the suggestions.",
]
REQUEST_CONTEXT = [
    "I only have about an hour a day for this.", "Money is a bit tight this month.",
    "I'd like something I can actually stick to.", "I've tried a few things before and nothing lasted.",
    "Nothing too complicated, please.", "It's been on my mind for weeks.",
    "I'd like to get it sorted this week.",
]
MIN_REPLY_WORDS, MAX_REPLY_WORDS = 150, 400


def advice_topic(rng: random.Random) -> str:
    return rng.choice(sorted(ADVICE))


def advice_request(rng: random.Random, topic: str, *, passing: str = "", request: str = "") -> str:
    """The user's request on ``topic``; ``passing`` (a clause, lower case, no
    full stop) is a fact mentioned along the way, as people do."""
    known: dict[str, str] = {}
    if request:
        lead, ask = request, ""
    else:
        lead, ask = (fill(rng, part, known, capital=False) for part in rng.choice(ADVICE[topic].requests))
    extra = " " + rng.choice(REQUEST_CONTEXT) if rng.random() < 0.4 else ""
    if not passing:
        return f"{lead}. {capitalised(ask)}{extra}" if ask else lead
    style = rng.randrange(4)
    if style == 0 or not ask:
        return f"{lead} — by the way, {passing} — {ask}{extra}"
    if style == 1:
        return f"{capitalised(passing)}. Anyway, {lower_first(lead)}, so {ask}{extra}"
    if style == 2:
        return f"{lead}. {capitalised(ask)} (Unrelated, but {passing}.){extra}"
    return f"Quick one. {lead}. Oh, and {passing}, in case it matters. {capitalised(ask)}"


def advice_reply(rng: random.Random, topic: str, *, insert: str = "") -> str:
    """An answer of 150 to 400 words: an opener, advice on the topic (a
    numbered list or paragraphs) with a little general advice mixed in, and
    a closing line. ``insert`` is a planted sentence (a restated fact, a date
    worked out, a recommendation), said where an assistant would say it:
    straight after the opener, or with the closing line."""
    known: dict[str, str] = {}
    target = rng.randint(MIN_REPLY_WORDS + 10, MAX_REPLY_WORDS - 35)
    opener, closing = rng.choice(OPENERS), rng.choice(CLOSINGS)
    if insert and rng.random() < 0.6:
        opener = f"{opener} {insert}"
    elif insert:
        closing = f"{insert} {closing}"
    pool = rng.sample(ADVICE[topic].advice, len(ADVICE[topic].advice))
    if rng.random() < 0.5:  # now and then a general point, after the first few
        pool.insert(rng.randint(3, 12), rng.choice(GENERAL_ADVICE))
    body: list[str] = []
    length = len(opener.split()) + len(closing.split())
    while length < target and pool:
        sentence = fill(rng, pool.pop(0), known)
        body.append(sentence)
        length += len(sentence.split())
    as_list = rng.random() < 0.5
    chunks, start = [], 0
    while start < len(body):  # list points of one or two sentences, paragraphs of two to six
        size = rng.choice((1, 2)) if as_list else rng.randint(2, 6)
        chunks.append(" ".join(body[start : start + size]))
        start += size
    if as_list:
        points = "\n".join(f"{n}. {chunk}" for n, chunk in enumerate(chunks, 1))
        return f"{opener} {rng.choice(LIST_LEADS)}\n\n{points}\n\n{closing}"
    return "\n\n".join([opener, *chunks, closing])
