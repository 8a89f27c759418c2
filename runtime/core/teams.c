/* PLACEHOLDER: replaced by the real implementation. */
#include "internal.h"

symm_status symm_team_config_init(symm_team_config *config, uint32_t struct_size) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_team_config_init: not implemented yet");
}

symm_status symm_team_get(symm_ctx ctx, uint32_t which, symm_team *team) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_team_get: not implemented yet");
}

symm_status symm_team_split_strided(symm_team parent, int32_t start, int32_t stride, int32_t size, const symm_team_config *config, symm_team *team) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_team_split_strided: not implemented yet");
}

symm_status symm_team_split_2d(symm_team parent, int32_t xrange, const symm_team_config *xconfig, const symm_team_config *yconfig, symm_team *xteam, symm_team *yteam) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_team_split_2d: not implemented yet");
}

symm_status symm_team_destroy(symm_team team) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_team_destroy: not implemented yet");
}

int32_t symm_team_my_pe(symm_team team) {
    return -1;
}

int32_t symm_team_n_pes(symm_team team) {
    return -1;
}

int32_t symm_team_translate_pe(symm_team src_team, int32_t src_pe, symm_team dst_team) {
    return -1;
}

symm_status symm_team_get_config(symm_team team, symm_team_config *config) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_team_get_config: not implemented yet");
}
