/**
 * `@name` in the composer: the summary of variable `name` of the active notebook's kernel,
 * shown as a removable chip and attached to the message (`GET /api/think/variables`).
 * Nothing is attached unless its chip is shown: a name the kernel does not have gets no
 * chip, a kernel that cannot answer (busy, none, not Python) a chip that says why and is
 * not sent. Pure helpers (unit tested) and the hook the composer uses.
 */

import { useCallback, useEffect, useRef, useState } from 'react';

import type { IPendingAttachment } from './attachments';

/** One variable as the server describes it. */
export interface IVariable {
  name: string;
  type: string;
  kind?: string;
  shape?: number[];
  error?: string;
  /** Its summary as the model reads it. */
  text?: string;
}

/** The answer of `GET /api/think/variables`. */
export interface IVariablesAnswer {
  status: 'ok' | 'busy' | 'no_kernel' | 'not_supported' | 'timeout' | 'error';
  path: string;
  message: string;
  text: string;
  variables: IVariable[];
  missing?: string[];
}

/** Reads variables of a notebook's kernel (the API's `inspectVariables`). */
export type InspectVariables = (
  path: string,
  names: string[]
) => Promise<IVariablesAnswer>;

/** At most this many `@name` chips per message. */
export const MAX_VARIABLE_CHIPS = 5;
/** Typing pauses this long (ms) before the kernel is asked. */
export const LOOKUP_DELAY = 250;
/** A busy kernel is asked again this often (ms) while its chip is shown. */
export const BUSY_RETRY = 1000;
const BUSY = { status: 'busy' } as IVariablesAnswer;
const TOKEN = /(^|[\s([{,;:])@([A-Za-z_][A-Za-z0-9_]*)/g;

/** The `@name` tokens of a message, each once, in order (not `a@b`, an e-mail). */
export function variableTokens(text: string): string[] {
  const names: string[] = [];
  for (const m of text.matchAll(TOKEN)) {
    if (!names.includes(m[2])) {
      names.push(m[2]);
    }
  }
  return names.slice(0, MAX_VARIABLE_CHIPS);
}

/** The chip's label: `@df · DataFrame 3×2`, `@n · int`. */
export function variableLabel(v: IVariable): string {
  const type = v.type.split('.').pop() ?? v.type;
  const shape = v.shape?.length ? ` ${v.shape.join('×')}` : '';
  return `@${v.name} · ${type}${shape}`;
}

/** What a kernel that cannot answer says on the chip. */
export function whyNot(answer: IVariablesAnswer): string {
  switch (answer.status) {
    case 'busy':
      return 'kernel busy';
    case 'no_kernel':
      return 'no kernel';
    case 'not_supported':
      return 'not a Python kernel';
    case 'timeout':
      return 'kernel did not answer';
    default:
      return 'cannot read it';
  }
}

/** The chip of a variable the kernel described (its summary goes inline). */
export function variableChip(v: IVariable, path: string): IPendingAttachment {
  const text = v.text ?? `${v.name}: ${v.type}`;
  return {
    id: `var-${path}-${v.name}`,
    kind: 'variables',
    name: variableLabel(v),
    size: text.length,
    summary: text,
    cells: { kind: 'variables', name: v.name, path, text }
  };
}

/** The chip of a name the kernel could not be asked about (shown, never sent). */
export function unreadableChip(
  name: string,
  path: string,
  answer: IVariablesAnswer
): IPendingAttachment {
  return {
    id: `var-${path}-${name}`,
    kind: 'variables',
    name: `@${name}`,
    size: 0,
    summary: answer.message,
    error: whyNot(answer)
  };
}

/** Chips for every name asked: found, refused (an error chip) or absent (no chip). */
export function chipsOf(
  names: string[],
  path: string,
  answer: IVariablesAnswer
): Map<string, IPendingAttachment | null> {
  const out = new Map<string, IPendingAttachment | null>();
  for (const name of names) {
    if (answer.status !== 'ok') {
      out.set(name, unreadableChip(name, path, answer));
      continue;
    }
    const v = answer.variables.find(x => x.name === name);
    out.set(name, v && !v.error ? variableChip(v, path) : null);
  }
  return out;
}

/** The `@name` chips of the composer's text: looked up as the person types. */
export function useVariableChips(
  text: string,
  path: string | null,
  inspect?: InspectVariables
): {
  chips: IPendingAttachment[];
  dismiss: (id: string) => void;
  reset: () => void;
} {
  // name -> chip (null: the kernel has no such variable), for the current notebook
  const [found, setFound] = useState(
    () => new Map<string, IPendingAttachment | null>()
  );
  const [dismissed, setDismissed] = useState<ReadonlySet<string>>(new Set());
  const asked = useRef(new Set<string>());
  const forPath = useRef(path);
  if (forPath.current !== path) {
    forPath.current = path;
    asked.current = new Set();
  }
  const names = path && inspect ? variableTokens(text) : [];
  const key = names.join(',');
  // A name taken out of the text is forgotten: typed again, it is asked again (its value
  // may have changed) and its chip shown again.
  useEffect(() => {
    const keep = (n: string): boolean => names.includes(n);
    asked.current = new Set([...asked.current].filter(keep));
    setFound(prev =>
      [...prev.keys()].every(keep)
        ? prev
        : new Map([...prev].filter(([n]) => keep(n)))
    );
    setDismissed(prev =>
      [...prev].every(keep) ? prev : new Set([...prev].filter(keep))
    );
  }, [key]);
  // A kernel busy with a cell is asked again until it answers (the chip then shows the
  // variable), while the name is still in the text.
  const [tick, setTick] = useState(0);
  const busy = names.some(n => found.get(n)?.error === whyNot(BUSY));
  useEffect(() => {
    if (!busy) {
      return;
    }
    const timer = setTimeout(() => setTick(t => t + 1), BUSY_RETRY);
    return () => clearTimeout(timer);
  }, [busy, tick]);

  useEffect(() => {
    if (!path || !inspect || !names.length) {
      return;
    }
    // Names not asked yet, and names whose kernel could not answer last time.
    const todo = names.filter(
      n => !asked.current.has(n) || !!found.get(n)?.error
    );
    if (!todo.length) {
      return;
    }
    let live = true;
    const timer = setTimeout(() => {
      todo.forEach(n => asked.current.add(n));
      inspect(path, todo)
        .then(answer => {
          if (live && forPath.current === path) {
            const more = chipsOf(todo, path, answer);
            setFound(prev => new Map([...prev, ...more]));
          }
        })
        .catch(() => {
          todo.forEach(n => asked.current.delete(n)); // asked again at the next change
        });
    }, LOOKUP_DELAY);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [key, path, inspect, tick]);

  const chips = names
    .filter(n => !dismissed.has(n))
    .map(n => found.get(n))
    .filter(
      (c): c is IPendingAttachment => !!c && c.id.startsWith(`var-${path}-`)
    );
  const dismiss = useCallback((id: string) => {
    setDismissed(prev => new Set([...prev, id.slice(id.lastIndexOf('-') + 1)]));
  }, []);
  const reset = useCallback(() => {
    asked.current = new Set();
    setFound(new Map());
    setDismissed(new Set());
  }, []);
  return { chips, dismiss, reset };
}
