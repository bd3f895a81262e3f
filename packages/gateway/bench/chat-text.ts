// Chat text for the search benches (this package's and @sessions/store-postgres's): sentences whose words follow
// Zipf's law over a 50,000-word vocabulary, as natural text does, so that a word of rank r is in about 1/r of them.

/** The most common words of English chat, most common first: the head of the vocabulary. */
const COMMON = (
  "the to i you and a it is of that in we for this on be have can do not with will just it's so but what my are " +
  "if at me was your get all there like know about one they up out from don't think how now would when an yes " +
  "no some time go see or he need here good make could please thanks let's did want new by work also check then " +
  "more today should back still any has been which look right them other because sure really last much our well " +
  "next who same where why first very going way thing send call after before file update team deploy build " +
  "error issue fix test release meeting week day tomorrow morning server data user account change review"
).split(" ");
const SYLLABLES =
  "ka lo mi ren tus val dor pe si an ur el zo fi gam bet nor qui lex sa mo ti ver cal dun".split(" ");
/** Words of the long tail (rank ≥ COMMON.length): made-up but pronounceable, each distinct. */
function tailWord(rank: number): string {
  let n = rank;
  let word = "";
  do {
    word += SYLLABLES[n % SYLLABLES.length];
    n = Math.floor(n / SYLLABLES.length);
  } while (n > 0);
  return word;
}
/** 50,000 words whose frequencies follow Zipf's law (the word of rank r is used ∝ 1/r), as natural text does. */
const VOCABULARY = 50_000;
/** The word of rank `rank` (0 is the most common). */
export const chatWord = (rank: number) => (rank < COMMON.length ? (COMMON[rank] as string) : tailWord(rank));
const harmonic = (() => {
  const cumulative = new Float64Array(VOCABULARY);
  let sum = 0;
  for (let r = 0; r < VOCABULARY; r++) {
    sum += 1 / (r + 1);
    cumulative[r] = sum;
  }
  return cumulative.map((c) => c / sum);
})();
function zipfRank(rand: () => number): number {
  const x = rand();
  let lo = 0;
  let hi = VOCABULARY - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((harmonic[mid] as number) < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
/** A chat message of 3 to 40 words (mostly short), capitalised and punctuated. */
export function chatSentence(rand: () => number): string {
  const length = 3 + Math.floor(rand() ** 2 * 38);
  const words: string[] = [];
  for (let i = 0; i < length; i++) words.push(chatWord(zipfRank(rand)));
  const text = words.join(" ");
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}${rand() < 0.3 ? "?" : "."}`;
}
