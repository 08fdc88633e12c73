#ifndef JGMIRROR_CYAML_SHIM_H
#define JGMIRROR_CYAML_SHIM_H

#include <yaml.h>

/* yaml_event_t.data is a union of structs; these accessors keep the Swift side plain. */
static inline const char *jg_event_scalar_value(const yaml_event_t *e) { return (const char *)e->data.scalar.value; }
static inline size_t jg_event_scalar_length(const yaml_event_t *e) { return e->data.scalar.length; }
static inline int jg_event_scalar_plain(const yaml_event_t *e) { return e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE; }
static inline const char *jg_event_alias_anchor(const yaml_event_t *e) { return (const char *)e->data.alias.anchor; }

#endif
