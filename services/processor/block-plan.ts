import type { KafkaMessage } from 'kafkajs';
import type { Block } from './block-source.js';
import type { OffsetRange } from './requests.writer.js';

/**
 * Splits a fetched batch of one partition into blocks of at most `maxBlock` messages, so that a
 * range recorded before a crash (`saved`) is re-sent exactly, with its token. If the fetch does not
 * reach the end of that range (it normally does), `rangeStored` decides: the messages up to its end
 * are skipped (stored) or processed as new.
 */
export async function planBlocks(
  topic: string,
  partition: number,
  messages: KafkaMessage[],
  saved: OffsetRange | undefined,
  maxBlock: number,
  rangeStored: (range: OffsetRange) => Promise<boolean>,
): Promise<Block[]> {
  const first = Number(messages[0]!.offset);
  const last = Number(messages[messages.length - 1]!.offset);
  const blocks: Block[] = [];
  let rest = messages;
  if (saved && first <= saved.max && last >= saved.min) {
    const head = messages.filter((m) => Number(m.offset) <= saved.max);
    rest = messages.filter((m) => Number(m.offset) > saved.max);
    const exact =
      Number(head[0]!.offset) === saved.min && Number(head[head.length - 1]!.offset) === saved.max;
    if (exact) {
      blocks.push({ topic, partition, range: saved, messages: head, replay: true });
    } else if (!(await rangeStored(saved))) {
      rest = messages;
    } else {
      // Commit past it even when nothing follows in this fetch, or the same fetch comes back forever.
      blocks.push({
        topic,
        partition,
        range: { min: first, max: saved.max },
        messages: [],
        replay: true,
        skip: true,
      });
    }
  }
  for (let i = 0; i < rest.length; i += maxBlock) {
    const part = rest.slice(i, i + maxBlock);
    blocks.push({
      topic,
      partition,
      range: { min: Number(part[0]!.offset), max: Number(part[part.length - 1]!.offset) },
      messages: part,
      replay: false,
    });
  }
  return blocks;
}
