#ifndef JGMIRROR_CYAML_SHIM_H
#define JGMIRROR_CYAML_SHIM_H

#include <yaml.h>

/* yaml_event_t.data is a union of structs; these accessors keep the Swift side plain. */
static inline const char *jg_event_scalar_value(const yaml_event_t *e) { return (const char *)e->data.scalar.value; }
static inline size_t jg_event_scalar_length(const yaml_event_t *e) { return e->data.scalar.length; }
static inline const char *jg_event_alias_anchor(const yaml_event_t *e) { return (const char *)e->data.alias.anchor; }
/* The explicit tag of a scalar, mapping or sequence (`!!str`, resolved to tag:yaml.org,2002:str), or NULL. */
static inline const char *jg_event_tag(const yaml_event_t *e) {
    switch (e->type) {
    case YAML_SCALAR_EVENT: return (const char *)e->data.scalar.tag;
    case YAML_MAPPING_START_EVENT: return (const char *)e->data.mapping_start.tag;
    case YAML_SEQUENCE_START_EVENT: return (const char *)e->data.sequence_start.tag;
    default: return 0;
    }
}

#endif
