/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * funcgraph: trace-cmd's own printing of the function_graph tracer's
 * events (funcgraph.c says how); private to the library.
 */
#ifndef TK_PRESENT_FUNCGRAPH_H
#define TK_PRESENT_FUNCGRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include <tracekit/outbuf.h>

#include "event-internal.h"

/*
 * tk_fgraph_is_leaf() - whether the record after an entry is its return
 * @entry, @edata, @esize, @epid: the ftrace:funcgraph_entry record and its pid
 * @exit, @xdata, @xsize, @xpid: the next record of the same buffer, known
 *   to be of type ftrace:funcgraph_exit, and its pid
 *
 * Return: true when the pids and the functions are the same.
 */
bool tk_fgraph_is_leaf(const struct tk_event *entry, const void *edata, uint32_t esize, int epid,
		       const struct tk_event *exit, const void *xdata, uint32_t xsize, int xpid);

/*
 * tk_fgraph_put_entry() - the text of a funcgraph_entry record: "func() {"
 * at its depth, or with @xdata (its return, see tk_fgraph_is_leaf()) the
 * leaf form "func();" with the call's duration
 * @memo: the printer's kallsyms memo (tk_event_ksym_find()), or NULL
 * Context: any printer thread; reads the set's built symbol table only.
 * Return: 0, or -ENOTSUP when a field is missing or lies past the record
 * (the caller prints the event's own format instead).
 */
/* trace-cmd's own -O options of the function graph (its plugin alias "fgraph"). */
enum {
	TK_FGRAPH_TAILPRINT = 1 << 0, /* fgraph:tailprint: the function named after an exit's "}" */
	TK_FGRAPH_DEPTH = 1 << 1,     /* fgraph:depth: " (DEPTH)" after each line's text */
};

/*
 * tk_fgraph_option() - apply one -O option if it is trace-cmd's function
 * graph option ("fgraph:tailprint", "fgraph:depth"; no value, "=1" or
 * "=true" sets it, "=0" or "=false" clears it) to *@flags.
 * Return: whether @opt was one.
 */
bool tk_fgraph_option(const char *opt, unsigned int *flags);

int tk_fgraph_put_entry(struct tk_event_set *set, struct tk_ksym_memo *memo,
			const struct tk_event *entry, const void *data, uint32_t size,
			const struct tk_event *exit, const void *xdata, uint32_t xsize,
			unsigned int flags, struct tk_outbuf *o);

/*
 * tk_fgraph_put_exit() - the text of a funcgraph_exit record: the duration
 * and "}" (with TK_FGRAPH_TAILPRINT the function's name when kallsyms has it)
 */
int tk_fgraph_put_exit(struct tk_event_set *set, struct tk_ksym_memo *memo,
		       const struct tk_event *exit, const void *data, uint32_t size,
		       unsigned int flags, struct tk_outbuf *o);

/*
 * ftrace:function lines as libtraceevent's function plugin prints them
 * (funcgraph.c): the indentation depends on every function record before,
 * so the merge computes it in record order with tk_fn_indent_next() and
 * any printer puts the line with tk_fn_put().
 */
struct tk_fn_indent;

/* Return: the per-CPU stacks, empty; NULL when out of memory. */
struct tk_fn_indent *tk_fn_indent_new(void);
void tk_fn_indent_free(struct tk_fn_indent *fi);

/*
 * tk_fn_indent_next() - the plugin's indentation index of the function
 * record @data (@size bytes, recorded on CPU @cpu), updating the stacks
 * Context: the merge thread only; @memo as for tk_fgraph_put_entry().
 * Return: the index (>= 0), or -ENOTSUP when the record lacks "ip" or
 * "parent_ip" (the plugin prints it then).
 */
int tk_fn_indent_next(struct tk_fn_indent *fi, struct tk_event_set *set, struct tk_ksym_memo *memo,
		      const struct tk_event *ev, const void *data, uint32_t size, uint32_t cpu);

/*
 * tk_fn_put() - the text of a function record: 3 * @index spaces, then
 * the function's name, or "0x%llx" of its address when kallsyms has none.
 * Return: 0, or -ENOTSUP (@index negative, or no "ip" field).
 */
int tk_fn_put(struct tk_event_set *set, struct tk_ksym_memo *memo, const struct tk_event *ev,
	      const void *data, uint32_t size, int index, struct tk_outbuf *o);

#endif
