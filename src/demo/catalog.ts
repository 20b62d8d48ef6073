import type { Config } from '../config/schema.js';

/**
 * The sample catalog behind the embedded demo upstream: stores, designs and products generated from
 * a seed, so every run (and every test) sees the same data without a network.
 *
 * Its shape is chosen to exercise the proxy: stores of very different sizes (one needs several store
 * pages, one holds a handful of designs), text with `&`, `'`, `"` and `<` for the double-escaping
 * quirk, and merchandise ids and captions taken from the configured table (docs/upstream.md §9).
 */

export interface Store {
  /** Alphanumeric, as CafePress store ids are (`cybersprocket`). */
  readonly id: string;
  readonly name: string;
}

export interface Section {
  readonly id: number;
  readonly name: string;
}

export interface Product {
  /** Unique across the catalog. */
  readonly productNumber: number;
  readonly merchandiseId: number;
  /** The configured caption of `merchandiseId`, unpadded. */
  readonly merchandiseCaption: string;
  readonly caption: string;
  readonly sellerDescription: string;
  /** What the store charges, in cents. */
  readonly priceCents: number;
  /** The marketplace's base price, in cents. */
  readonly marketplacePriceCents: number;
  readonly colors: readonly string[];
  readonly sizes: readonly string[];
}

export interface Design {
  /** Unique; increases with `createdAt`. */
  readonly mediaId: number;
  readonly store: Store;
  readonly caption: string;
  /** ISO 8601; strictly increasing in catalog order. */
  readonly createdAt: string;
  /** Popularity, 1–10000; what `by_score_desc` sorts on. */
  readonly score: number;
  /** `null`: the design sits at the top of its store, outside any section. */
  readonly section: Section | null;
  /** 1–5 products, each of a different merchandise type. */
  readonly products: readonly Product[];
}

export interface Catalog {
  readonly stores: readonly Store[];
  /** In creation order: `mediaId` and `createdAt` ascending. */
  readonly designs: readonly Design[];
}

export interface CatalogOptions {
  readonly seed: number;
  readonly stores: number;
  readonly designs: number;
  /** Merchandise id → caption, as `config.mapping.merchandise`. */
  readonly merchandise: Readonly<Record<string, string>>;
}

export function catalogOptions(config: Config): CatalogOptions {
  return { ...config.demo, merchandise: config.mapping.merchandise };
}

/** The same options always give the same catalog. */
export function generateCatalog(options: CatalogOptions): Catalog {
  if (Object.keys(options.merchandise).length === 0) {
    throw new Error('The demo catalog needs merchandise types: mapping.merchandise is empty.');
  }
  const random = new Random(options.seed);
  const stores = Array.from({ length: options.stores }, (_, index) => storeAt(index));
  const sections = new Map(stores.map((store, index) => [store.id, storeSections(random, index)]));
  const merchandise = merchandiseTable(random, options.merchandise);

  // Which store each design belongs to: exact counts per store, in shuffled order so that the big
  // store does not own one contiguous run of the catalog.
  const owners = random.shuffle(
    storeDesignCounts(options.stores, options.designs).flatMap((count, index) => Array<number>(count).fill(index)),
  );

  const counters = { mediaId: FIRST_MEDIA_ID, productNumber: FIRST_PRODUCT_NUMBER, minutes: 0 };
  const stepMinutes = Math.max(1, Math.floor((2 * CATALOG_SPAN_MINUTES) / options.designs));
  const designs = owners.map((owner): Design => {
    const store = stores[owner] as Store;
    counters.mediaId += random.int(1, 4000);
    counters.minutes += random.int(1, stepMinutes);
    const caption = designCaption(random);
    const storeSectionList = sections.get(store.id) ?? [];
    const section = random.chance(0.15) ? null : random.pick(storeSectionList);
    const types = random.sample(merchandise, random.int(1, 5));
    return {
      mediaId: counters.mediaId,
      store,
      caption,
      createdAt: new Date(CATALOG_START + counters.minutes * 60_000).toISOString(),
      score: random.int(1, 10_000),
      section,
      products: types.map((type) => {
        counters.productNumber += random.int(1, 5000);
        return product(random, counters.productNumber, type, caption);
      }),
    };
  });
  return { stores, designs };
}

/**
 * Designs per store: one each, the rest shared out with weights falling by a factor of three from
 * store to store (largest remainder). With 6 stores and 480 designs: 317, 107, 36, 13, 5, 2, so the
 * first store needs two pages of 256 and the last fits in any page.
 */
export function storeDesignCounts(stores: number, designs: number): number[] {
  const base = Array.from({ length: stores }, (_, index) => (index < designs ? 1 : 0));
  const rest = Math.max(0, designs - stores);
  const weights = base.map((_, index) => 3 ** -index);
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  const quotas = weights.map((weight) => (rest * weight) / total);
  const counts = quotas.map((quota, index) => (base[index] ?? 0) + Math.floor(quota));
  const leftover = rest - quotas.reduce((sum, quota) => sum + Math.floor(quota), 0);
  const byRemainder = quotas
    .map((quota, index) => ({ index, remainder: quota - Math.floor(quota) }))
    .sort((a, b) => b.remainder - a.remainder || a.index - b.index);
  for (const { index } of byRemainder.slice(0, leftover)) counts[index] = (counts[index] ?? 0) + 1;
  return counts;
}

const FIRST_MEDIA_ID = 8_000_000;
const FIRST_PRODUCT_NUMBER = 30_000_000;
const CATALOG_START = Date.UTC(2004, 0, 1);
const CATALOG_SPAN_MINUTES = 6 * 365 * 24 * 60;

/** mulberry32: small, fast and good enough for sample data; the same seed gives the same sequence. */
class Random {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** In [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** In [min, max], both inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** Fisher–Yates, on a copy. */
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [out[i], out[j]] = [out[j] as T, out[i] as T];
    }
    return out;
  }

  /**
   * `count` distinct items, biased towards the front of the list (index ∝ u²), so that the first
   * merchandise types (mugs, T-shirts) are common and filters on them match many designs.
   */
  sample<T>(items: readonly T[], count: number): T[] {
    const chosen = new Set<number>();
    const wanted = Math.min(count, items.length);
    while (chosen.size < wanted) chosen.add(Math.floor(this.next() ** 2 * items.length));
    return [...chosen].map((index) => items[index] as T);
  }
}

// --- Stores -------------------------------------------------------------------------------------

const NAMED_STORES: readonly Store[] = [
  { id: 'cybersprocket', name: 'Cyber Sprocket Labs' },
  { id: 'spayneuter', name: 'Paws Pet Shop Promoting Spay Neuter & Rescue' },
  { id: 'teeshack', name: "Nick's Tee Shack" },
  { id: 'dogdaycafe', name: 'Dog Day Cafe' },
  { id: 'pixelpress', name: 'The PixelPress Shop!' },
  { id: 'goldenpaws', name: '1000 Golden Paws' },
  { id: 'moonbeam', name: 'Moonbeam "Cosmic" Tees' },
  { id: 'catnapstudio', name: 'Catnap Studio' },
  { id: 'retrorocket', name: 'Retro Rocket <Vintage> Designs' },
  { id: 'gardengnome', name: "Grandma's Garden Gnome Emporium" },
];

function storeAt(index: number): Store {
  return NAMED_STORES[index] ?? { id: `demostore${index + 1}`, name: `Demo Store ${index + 1}` };
}

const SECTION_NAMES: readonly string[] = [
  'New Arrivals',
  'Gifts & Accessories',
  "Valentine's Day",
  'Dog Stickers: Oval/Euro Style',
  'T-Shirts',
  'Mugs',
  'Best Sellers',
  'Holiday "Specials"',
];

function storeSections(random: Random, storeIndex: number): Section[] {
  return random
    .shuffle(SECTION_NAMES)
    .slice(0, 3)
    .map((name, index) => ({ id: 900_000 + storeIndex * 100 + index, name }));
}

// --- Designs ------------------------------------------------------------------------------------

const WORDS: readonly string[] = [
  'dog',
  'cat',
  'coffee',
  'sprocket',
  'rescue',
  'robot',
  'pirate',
  'garden',
  'rocket',
  'moon',
  'taco',
  'ninja',
  'vintage',
  'happy',
  'grumpy',
  'cosmic',
  'retro',
  'puppy',
  'kitten',
  'zombie',
  'surf',
  'mountain',
  'beer',
  'yoga',
  'guitar',
  'science',
  'unicorn',
  'dragon',
  'bacon',
  'love',
];

/** Two to four words in title case; some joined with `&`, some possessive, for the escaping quirk. */
function designCaption(random: Random): string {
  const words = Array.from({ length: random.int(2, 4) }, () => titleCase(random.pick(WORDS)));
  if (random.chance(0.1)) words[0] = `${words[0]}'s`;
  if (words.length > 2 && random.chance(0.15)) words.splice(1, 0, '&');
  return words.join(' ');
}

function titleCase(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

// --- Products -----------------------------------------------------------------------------------

interface MerchandiseType {
  readonly id: number;
  readonly caption: string;
  readonly basePriceCents: number;
}

/** The configured merchandise in id order, each with a base price in whole dollars. */
function merchandiseTable(random: Random, merchandise: Readonly<Record<string, string>>): MerchandiseType[] {
  return Object.entries(merchandise)
    .map(([id, caption]) => ({ id: Number(id), caption }))
    .sort((a, b) => a.id - b.id)
    .map((type) => ({ ...type, basePriceCents: random.int(4, 30) * 100 }));
}

const MARKUPS_CENTS: readonly number[] = [49, 99, 199, 299, 499];

function product(random: Random, productNumber: number, type: MerchandiseType, designCaption: string): Product {
  return {
    productNumber,
    merchandiseId: type.id,
    merchandiseCaption: type.caption,
    caption: `${designCaption} ${type.caption}`,
    sellerDescription: sellerDescription(random, designCaption),
    priceCents: type.basePriceCents + random.pick(MARKUPS_CENTS),
    marketplacePriceCents: type.basePriceCents,
    colors: colors(random, type.caption),
    sizes: sizes(type.caption),
  };
}

/** Often empty, as in the captured response; otherwise with the characters the quirk doubles. */
function sellerDescription(random: Random, designCaption: string): string {
  const word = random.pick(WORDS);
  switch (random.int(0, 3)) {
    case 0:
      return '';
    case 1:
      return `Original "${designCaption}" artwork, printed & shipped in 2 days.`;
    case 2:
      return `Show everyone you're a ${word} fan!`;
    default:
      return `<i>${designCaption}</i>: a great gift for ${word} lovers & friends.`;
  }
}

const APPAREL = /shirt|tee\b|\bt\b|hoodie|tank|jersey|polo|bodysuit|raglan|tracksuit|thong|boxer|brief/i;
const DARK = /dark/i;
const BABY = /infant|toddler/i;
const KIDS = /kids/i;

const LIGHT_COLORS: readonly string[] = ['White', 'Ash Grey', 'Light Pink', 'Light Yellow', 'Light Blue', 'Natural'];
const DARK_COLORS: readonly string[] = ['Black', 'Cardinal', 'Navy', 'Military Green', 'Red', 'Royal', 'Brown', 'Charcoal'];
const ADULT_SIZES: readonly string[] = ['Small', 'Medium', 'Large', 'X-Large', '2X-Large (+$3.00)'];
const KIDS_SIZES: readonly string[] = ['XS (2-4)', 'S (6-8)', 'M (10-12)', 'L (14-16)'];
const BABY_SIZES: readonly string[] = ['6-12 Months', '12-18 Months', '18-24 Months'];

/** Apparel comes in colours (sometimes none listed, as in the capture); other merchandise never. */
function colors(random: Random, merchandiseCaption: string): string[] {
  if (!APPAREL.test(merchandiseCaption)) return [];
  const palette = DARK.test(merchandiseCaption) ? DARK_COLORS : LIGHT_COLORS;
  return random.shuffle(palette).slice(0, random.int(0, 4));
}

function sizes(merchandiseCaption: string): readonly string[] {
  if (!APPAREL.test(merchandiseCaption)) return [];
  if (BABY.test(merchandiseCaption)) return BABY_SIZES;
  return KIDS.test(merchandiseCaption) ? KIDS_SIZES : ADULT_SIZES;
}
